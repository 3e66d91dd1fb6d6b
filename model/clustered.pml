/* WAL_STORAGE=clustered, as Spin checks it: a primary on machine A keeps its disk WAL and a synchronous copy on the
 * replica of machine B; B's copy can be promoted (the primary is replaced) while A still runs. As in the code:
 *  - open: the WAL opens only once the copy holds everything committed here (open_clustered_wal, catch_up_until):
 *    a handshake (handshake_locked) in which B refuses a primary of a term below its own (refuse_older_term), else
 *    takes the primary's term; a copy that continues this WAL (continues_this_wal: not ahead, not behind the landed
 *    watermark, its newest batch equal to this WAL's batch of that seq) gets the missing batches; any other is
 *    started again at the watermark (RESET_COPY, incomplete until CAUGHT_UP);
 *  - commit (ClusteredWal::commit): the frame goes to B first, then the local fdatasync, then the ACK is awaited; a
 *    lost or missing ACK reconnects (the handshake again): the batch counts as committed only when that succeeds,
 *    else the run ends with 75 and the next one sends it. Only a committed batch is acknowledged to the source
 *    (SyncRun::commit_stage) and handed to the lander;
 *  - landing: the destination's ledger keeps each batch id (lineage and epoch survive a promotion, so the id is the
 *    seq); LANDED marks go to B with the next frame; a primary that was replaced may still land what it committed;
 *  - promote (promote_locked_copy): only a complete copy; the term goes above every term the copy has seen; the new
 *    primary on B runs on the copy (here without a peer of its own) and lands what waits in it.
 * Where it differs from the code, it allows more, never less: the replica checks the term at HELLO and, within a
 * session, the pipeline lock (run_session holds it; promote gets kLocked) keeps a promotion out, while here every
 * frame checks the term and a promotion may fall anywhere (the lock is not modelled). The lander is a step of the
 * primary (in the code a thread that may land during a reconnect), LANDED goes out right after a landing (in the
 * code with the next frame), and one lineage and epoch are modelled (continues_this_wal also compares them).
 * A batch holds one or two records (where a poll is cut varies); the source forgets what it was acknowledged (a CDC
 * slot), so a record acknowledged but held by no WAL is lost for good. A crashes (twice at most), the replica goes
 * down and up (twice), B's disk may be lost once (its copy is then gone), and the copy may be promoted once, at any
 * step.
 * Properties: the source is never acknowledged past what the running primary's WAL holds (nothing committed is
 * lost, checked at every read); every record lands at most once at every moment, although the replaced primary may
 * go on landing; when the runs end, every record is in the destination exactly once.
 * Broken variants: ACK_LOCAL_ONLY (a commit counts once the local fdatasync is done, without the peer's ACK: a
 * silent single copy); NO_TERM_CHECK (the replica takes frames of a replaced primary); PROMOTE_INCOMPLETE (a copy
 * cut short while it was being started again can be promoted).
 * story: a_last = |b_last = |src_acked = |promoted = |b_up = |b_disk_lost = |b_complete = |b_term = |ledger\[.*\] =  */

#ifndef N
#define N 3
#endif
#define S (N + 1)   /* seqs 1..N: every batch holds at least one record */
#define CRASHES 2
#define DOWNS 2

/* Machine A: the primary's disk WAL; batch seq holds records lo..hi; landed: its LANDED watermark. */
byte a_lo[S + 1];
byte a_hi[S + 1];
byte a_last = 0;
byte a_landed = 0;
/* Machine B: the copy, the position after its newest batch, its landed mark, the highest term it has seen,
 * whether it is complete, whether the replica is up. */
byte b_lo[S + 1];
byte b_hi[S + 1];
byte b_last = 0;
byte b_pos = 0;
byte b_landed = 0;
byte b_term = 0;
bool b_complete = false;   /* no copy yet */
bool b_up = true;
bool b_disk_lost = false;
/* The source: forgets every record up to what it was acknowledged. */
byte src_acked = 0;
/* The destination. */
bool ledger[S + 1];
byte dest_rows[N + 1];
bool promoted = false;
bool a_done = false;   /* A finished, or was fenced and stopped for good */
bool b_done = false;

/* Lands batch s of a WAL whose batches are los[]..his[] (a macro: Promela's inline takes no arrays). */
#define LAND(s, los, his) \
  atomic { \
    if \
    :: !ledger[s] -> \
       ledger[s] = true; \
       k = los[s]; \
       do :: k <= his[s] -> dest_rows[k]++; assert(dest_rows[k] <= 1); k++ :: else -> break od \
    :: else -> skip /* the ledger holds the id: already applied */ \
    fi \
  }

/* Whether B's replica answers a frame of a primary of term t: it is up, has not lost its disk since the session's
 * handshake (a replica that did restarted, and the connection with it), and t is not below its term. */
#ifdef NO_TERM_CHECK
#define REFUSES(t) false
#else
#define REFUSES(t) ((t) < b_term)
#endif
#define ACCEPTS(t) (b_up && !b_disk_lost && !REFUSES(t))

/* A may be killed here: what it holds in memory is gone, the next run starts at open. */
#define CRASH_POINT if :: skip :: crashes < CRASHES -> goto crash fi

proctype PrimaryA() {
  byte t = 1;          /* A's term */
  byte crashes = 0;
  byte pos, lo, hi, seq, l, c, k;
  bool acked, reconnecting = false;
open:
  /* handshake_locked: HELLO, B's COPY_STATE, then the copy is continued or started again. */
  atomic {
    if
    :: b_up && REFUSES(t) -> goto fenced   /* refused: "promoted to term ..." (kFenced) */
    :: !b_up -> goto down
    :: else -> skip
    fi;
    if :: t > b_term -> b_term = t :: else -> skip fi;
    if
    :: b_last <= a_last && b_last >= a_landed && !b_disk_lost &&
       (b_last == a_landed || (b_lo[b_last] == a_lo[b_last] && b_hi[b_last] == a_hi[b_last])) -> skip
    :: else ->
       /* RESET_COPY at the watermark; the position is known only when nothing waits */
       b_disk_lost = false; b_last = a_landed; b_landed = a_landed; b_complete = false;
       if :: a_last == a_landed -> b_pos = (a_last > 0 -> a_hi[a_last] : 0) :: else -> skip fi
    fi
  }
  do
  :: b_last < a_last ->
     atomic {
       if
       :: ACCEPTS(t) -> b_last++; b_lo[b_last] = a_lo[b_last]; b_hi[b_last] = a_hi[b_last]; b_pos = b_hi[b_last]
       :: else -> goto down
       fi
     }
     CRASH_POINT
  :: else -> break
  od;
  atomic { if :: ACCEPTS(t) -> b_complete = true :: else -> goto down fi }   /* CAUGHT_UP, acknowledged */
  if :: reconnecting -> reconnecting = false; goto committed :: else -> skip fi;
  /* The WAL is open: recovery from what is durable here. */
  pos = (a_last > 0 -> a_hi[a_last] : 0);
  l = a_landed;
  c = a_last;   /* what may be landed: committed before, or by this run */
  do
  :: pos < N ->
     /* The source must still hold what follows the WAL's position: else a record it was told was committed is
      * held by no WAL (lost). A primary already replaced may find the source moved on by the new one: its next
      * frame is refused (it is fenced), and what it read is in the copy. */
     assert(pos >= src_acked || t < b_term);
     lo = pos + 1;
     if :: hi = lo :: lo < N -> hi = lo + 1 fi;
     seq = a_last + 1;
     acked = false;
     atomic {   /* the BATCH frame; B appends it only where it continues the copy */
       if
       :: ACCEPTS(t) && b_last == seq - 1 ->
          b_last = seq; b_lo[seq] = lo; b_hi[seq] = hi; b_pos = hi; acked = true
       :: else -> skip
       fi
     }
     CRASH_POINT;
     atomic { a_last = seq; a_lo[seq] = lo; a_hi[seq] = hi }   /* the local fdatasync */
     CRASH_POINT;
     if :: acked -> skip :: acked -> acked = false /* the ACK was lost */ :: else -> skip fi;
#ifdef ACK_LOCAL_ONLY
     acked = true;
#endif
     if
     :: acked -> skip
     :: else -> reconnecting = true; goto open   /* reconnect_locked; fails as exit 75 at `down` */
     fi;
committed:
     if :: a_hi[a_last] > src_acked -> src_acked = a_hi[a_last] :: else -> skip fi;   /* Source::acknowledge */
     pos = a_hi[a_last];
     c = a_last
  :: l < c ->
     LAND(l + 1, a_lo, a_hi);
     l++;
     a_landed = l;
     atomic { if :: ACCEPTS(t) && b_landed < l && b_last >= l -> b_landed = l :: else -> skip fi }   /* LANDED */
     CRASH_POINT
  :: pos >= N && l >= c -> break
  od;
  goto end;
crash:
  crashes++;
  reconnecting = false;
  goto open;
down:
  /* Exit 75; the next run starts once the replica answers again (or B was promoted: then it is refused). */
  reconnecting = false;
  (b_up || promoted);
  goto open;
fenced:
  /* A replaced primary stops; a restart is refused the same way: it commits and lands nothing more. */
  skip;
end:
  a_done = true
}

/* The replica's machine: down and up again, its disk lost once, and an operator's `skipprd promote` at any time,
 * after which a new primary runs on the copy. */
proctype MachineB() {
  byte downs = 0, pos, lo, hi, seq, l, k;
  bool disk_lost_once = false;
  do
  :: b_up && downs < DOWNS -> b_up = false; downs++
  :: !b_up -> b_up = true
  :: atomic {   /* the copy and the replica's state (its term) are gone; the replica starts empty */
       b_up && !disk_lost_once && !promoted ->
       disk_lost_once = true; b_disk_lost = true; b_complete = false; b_last = 0; b_landed = 0; b_term = 0 }
  :: atomic {
#ifdef PROMOTE_INCOMPLETE
       b_up && !promoted ->
#else
       b_up && !promoted && b_complete ->
#endif
       promoted = true; b_disk_lost = false; b_term = (b_term > 1 -> b_term : 1) + 1 }   /* above every term seen */
     break
  :: b_up -> break   /* no more faults, no promotion */
  od;
  if :: !promoted -> goto end :: else -> skip fi;
  /* The new primary on B: recovery from the copy, no peer. */
  pos = b_pos;
  l = b_landed;
  do
  :: pos < N ->
     assert(pos >= src_acked);
     lo = pos + 1;
     if :: hi = lo :: lo < N -> hi = lo + 1 fi;
     atomic { seq = b_last + 1; b_last = seq; b_lo[seq] = lo; b_hi[seq] = hi; b_pos = hi }
     if :: hi > src_acked -> src_acked = hi :: else -> skip fi;
     pos = hi
  :: l < b_last ->
     LAND(l + 1, b_lo, b_hi);
     l++;
     b_landed = l
  :: pos >= N && l >= b_last -> break
  od;
  b_done = true;
end:
  skip
}

init {
  byte i;
  atomic { run PrimaryA(); run MachineB() }
  (_nr_pr == 1);
  /* Whoever ran last read everything: every record is in the destination exactly once. */
  assert(a_done && (!promoted || b_done));
  i = 1;
  do :: i <= N -> assert(dest_rows[i] == 1); i++ :: i > N -> break od
}
