/* WAL_STORAGE=s3 with the DynamoDB state store, as Spin checks it: two processes race for one pipeline. The lease
 * carries a fencing token that only grows (DynamoDbStateStore's lease, PipelineStorage::acquire); a process may be
 * paused past its lease at any step, the other takes over, and the paused one resumes with its old token. Each batch
 * is one WAL object at a key named by its seq, created only if absent (S3Wal: PutObject If-None-Match: *); the state
 * records the committed seq and source position with a write conditional on the token (the commit). A PUT may lose
 * its answer (an unknown outcome) and is retried. Landing goes to a destination with a ledger (a retry finds the id).
 *
 * Properties: a process whose token is no longer the lease's never commits (no state write succeeds with it); every
 * record lands at most once at every moment; when the runs end, every record is in the destination exactly once.
 * Broken variants: COMMIT_WITHOUT_TOKEN (the state write does not check the token); NEW_KEY_ON_RETRY (a PUT retried
 * after an unknown outcome goes to the next key, as a random or timestamped key would). */

#ifndef N
#define N 3
#endif
#define TAKEOVERS 2

byte lease_token = 0;        /* the state store's fencing token; 0: nobody has held it */
byte takeovers = 0;
byte obj[N + 3];             /* S3: the record in WAL object <seq>, 0 when absent */
byte st_seq = 0;             /* state: the committed seq and the source position after it */
byte st_pos = 0;
byte dest_rows[N + 1];       /* the destination's rows per record */
bool ledger[N + 3];          /* the destination's ledger: batch ids (one lineage, so the seq) */
byte finished = 0;

inline land(seq) {
  atomic {
    if :: !ledger[seq] -> ledger[seq] = true; dest_rows[obj[seq]]++ :: else -> skip fi;
    assert(dest_rows[obj[seq]] <= 1)
  }
}

proctype Owner() {
  byte tok, s, r, key, l;
acquire:
  /* Takes the lease: free at first, or expired (its holder paused or gone), at most TAKEOVERS times. */
  atomic {
    if
    :: lease_token == 0 || takeovers < TAKEOVERS ->
       if :: lease_token > 0 -> takeovers++ :: else -> skip fi;
       lease_token++; tok = lease_token
    :: else -> goto end   /* held by the other: exit 3, as sync does when the lease is not free */
    fi
  }
  /* Recovery: the state, then every WAL object beyond it (committed by a predecessor whose state write was lost). */
  s = st_seq; r = st_pos;
rescan:
  do :: obj[s + 1] != 0 -> s++; r = obj[s] :: else -> break od;
  l = 0;
  do
  :: r < N ->
     key = s + 1;
put:
     atomic {
       if
       :: obj[key] == 0 -> obj[key] = r + 1
       :: obj[key] != 0 && tok == lease_token -> goto rescan  /* a fenced owner's object: adopt it, go on after */
       :: obj[key] != 0 && tok != lease_token -> goto lost    /* the new owner wrote it: we are fenced */
       fi
     }
     if
     :: true -> skip                    /* the answer arrived */
     :: true ->                         /* the answer was lost: retry */
#ifdef NEW_KEY_ON_RETRY
        key++; if :: key <= N + 2 -> goto put :: else -> skip fi
#else
        skip                            /* the same key: If-None-Match finds our object, the PUT is done */
#endif
     fi;
     /* The commit: the state write, conditional on still holding the lease's token. */
     atomic {
#ifdef COMMIT_WITHOUT_TOKEN
       st_seq = key; st_pos = r + 1;
       assert(tok == lease_token)       /* a fenced owner committed */
#else
       if
       :: tok == lease_token -> st_seq = key; st_pos = r + 1
       :: else -> goto lost
       fi
#endif
     }
     s = key; r = r + 1
  :: l < s ->
     /* Landing checks the lease first (lease_->check), then lands with the ledger: a paused owner that passed the
      * check may land after a takeover, and the ledger makes that harmless. */
     if :: tok != lease_token -> goto lost :: else -> skip fi;
     l++;
     if :: obj[l] != 0 -> land(l) :: else -> skip fi
  :: r >= N && l >= s -> break
  od;
  finished++;
  goto end;
lost:
  /* Fenced: stop, commit and land nothing more; start over only by taking the lease again. */
  if :: takeovers < TAKEOVERS -> goto acquire :: else -> skip fi;
end:
  skip
}

init {
  run Owner(); run Owner();
  (_nr_pr == 1);   /* both owners ended */
  byte i = 1;
  do
  :: i <= N && i <= st_pos -> assert(dest_rows[i] <= 1); i++
  :: else -> break
  od;
  /* The last owner cannot be fenced (no takeover is left), so it finishes: every record is in the destination once. */
  assert(finished > 0);
  i = 1;
  do :: i <= N -> assert(dest_rows[i] == 1); i++ :: i > N -> break od
}
