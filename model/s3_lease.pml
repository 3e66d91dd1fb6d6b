/* WAL_STORAGE=s3 with the DynamoDB state store, as Spin checks it: two processes race for one pipeline. The lease
 * carries a fencing token that only grows (PipelineStorage::acquire); a process may be paused past its lease at any
 * step, the other takes over, and the paused one resumes with its old token. As in src/wal/s3_wal.cc:
 *  - each batch is one object at the key <seq>-<token> (batch_key), created only if absent; a PUT whose answer was
 *    lost is retried at that key, and an object found there with this writer's bytes is its own earlier attempt
 *    (put_reconciled);
 *  - the commit is the state store's commit record (seq, position, writer token), written only while the token is
 *    the lease's (CommitLog::commit); a commit whose answer was lost is retried for the same seq, and finding it
 *    already there is success;
 *  - recovery takes what the commit log names, nothing else: an object no commit names (a crash between PUT and
 *    commit, or a fenced writer's late PUT) is an orphan, deleted at open and never landed;
 *  - landing checks the lease (lease_->check), then lands with the destination's ledger (a repeat finds the id).
 * Properties: a writer whose token is no longer the lease's never commits; every record lands at most once at every
 * moment; when the runs end, every record is in the destination exactly once.
 * Broken variants: COMMIT_WITHOUT_TOKEN (the commit does not check the token); NEW_SEQ_ON_RETRY (a commit retried
 * after a lost answer takes the next seq, as a fresh id or key after a timeout would).
 * story: lease_token = |obj\[.*\] = |st_seq = |ledger\[.*\] = |takeovers =  */

#ifndef N
#define N 3
#endif
#define TAKEOVERS 2
#define TOKENS (TAKEOVERS + 2)
#define KEY(seq, tok) ((seq) * TOKENS + (tok))

byte lease_token = 0;            /* the state store's fencing token; 0: nobody has held it */
byte takeovers = 0;
byte obj[(N + 3) * TOKENS];      /* S3: the record in object <seq>-<token>, 0 when absent */
byte st_seq = 0;                 /* the commit log: the last committed seq, the position after it, */
byte st_pos = 0;
byte st_tok[N + 3];              /* and which writer's object each seq is */
byte st_rec[N + 3];              /* (the record it holds, for the checks) */
byte dest_rows[N + 1];           /* the destination's rows per record */
bool ledger[N + 3];              /* the destination's ledger of batch ids (one lineage and epoch: the seq) */
byte finished = 0;

inline land(seq) {
  atomic {
    if :: !ledger[seq] -> ledger[seq] = true; dest_rows[obj[KEY(seq, st_tok[seq])]]++ :: else -> skip fi;
    assert(dest_rows[obj[KEY(seq, st_tok[seq])]] <= 1)
  }
}

proctype Owner() {
  byte tok, s, r, l, seq;
acquire:
  atomic {
    if
    :: lease_token == 0 || takeovers < TAKEOVERS ->
       if :: lease_token > 0 -> takeovers++ :: else -> skip fi;
       lease_token++; tok = lease_token
    :: else -> goto end   /* held by the other: exit 3, as sync does when the lease is not free */
    fi
  }
  s = st_seq; r = st_pos;   /* recovery: what the commit log names */
  l = 0;
  do
  :: r < N ->
     seq = s + 1;
     /* PUT If-None-Match at <seq>-<token>; retried at the same key after a lost answer (put_reconciled). */
     atomic {
       if
       :: obj[KEY(seq, tok)] == 0 -> obj[KEY(seq, tok)] = r + 1
       :: else -> assert(obj[KEY(seq, tok)] == r + 1)   /* only this writer's own earlier attempt can be there */
       fi
     }
     if :: skip :: obj[KEY(seq, tok)] = obj[KEY(seq, tok)] fi;  /* the answer arrived, or was lost and retried */
commit:
     atomic {
#ifdef COMMIT_WITHOUT_TOKEN
       if
       :: st_seq == seq - 1 -> st_seq = seq; st_pos = r + 1; st_tok[seq] = tok; st_rec[seq] = r + 1
       :: else -> goto lost
       fi;
       assert(tok == lease_token)   /* a fenced writer committed */
#else
       if
       :: tok == lease_token && st_seq == seq - 1 -> st_seq = seq; st_pos = r + 1; st_tok[seq] = tok; st_rec[seq] = r + 1
       :: tok == lease_token && st_seq >= seq && st_tok[seq] == tok -> skip   /* our own commit, answer lost */
       :: else -> goto lost
       fi
#endif
     }
     /* The commit's answer may be lost: retried for the same seq (or, broken, as a new batch at the next seq). */
     if
     :: skip
     :: true ->
#ifdef NEW_SEQ_ON_RETRY
        if :: seq < N + 2 -> seq++; obj[KEY(seq, tok)] = r + 1; goto commit :: else -> skip fi
#else
        goto retry_commit
#endif
     fi;
     goto committed;
retry_commit:
     atomic {
       if
       :: tok == lease_token && st_seq >= seq && st_tok[seq] == tok -> skip
       :: tok == lease_token && st_seq == seq - 1 -> st_seq = seq; st_pos = r + 1; st_tok[seq] = tok; st_rec[seq] = r + 1
       :: else -> goto lost
       fi
     }
committed:
     s = seq; r = st_rec[seq]
  :: l < s ->
     if :: tok != lease_token -> goto lost :: else -> skip fi;   /* lease_->check before landing */
     l++;
     land(l)
  :: r >= N && l >= s -> break
  od;
  finished++;
  goto end;
lost:
  /* Fenced: commit and land nothing more; start over only by taking the lease again (a restart). */
  if :: takeovers < TAKEOVERS -> goto acquire :: else -> skip fi;
end:
  skip
}

init {
  byte i;
  run Owner(); run Owner();
  (_nr_pr == 1);   /* both owners ended */
  /* The last owner cannot be fenced (no takeover is left), so it finishes: every record is in the destination once. */
  assert(finished > 0);
  i = 1;
  do :: i <= N -> assert(dest_rows[i] == 1); i++ :: i > N -> break od
}
