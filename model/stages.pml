/* The stages of one sync as concurrent threads (SyncRun in src/engine/sync.cc), as Spin checks them: the committer
 * takes what the source gives, appends and fdatasyncs it as a batch, acknowledges the source and hands the batch on
 * through a bounded queue (commit_stage, BoundedQueue); the lander lands what an earlier run left in the WAL, then
 * each new batch with the destination's ledger, and writes the LANDED mark of what it landed (land_stage,
 * land_group, DiskWal::mark_landed). Every interleaving of the two is explored. A crash kills both at once (kill -9
 * takes the process): the queue and everything in memory are gone, the threads of that run do nothing more, and a
 * new run recovers from what is durable (wal::scan_wal) and starts new threads (2 crashes). The source forgets what
 * it was acknowledged (a CDC slot). The reader thread is folded into the committer: reading has no durable effect.
 * Properties: the source is never acknowledged past what is durable; every record lands at most once at every
 * moment; when the last run ends, every record is in the destination exactly once.
 * Broken variants: MARK_TO_COMMITTED (the lander's LANDED mark covers what is committed when it writes the mark,
 * not what it landed: a batch committed meanwhile is taken for landed); ACK_BEFORE_FSYNC (the committer
 * acknowledges the source before the fdatasync).
 * story: wal_durable = |landed_mark = |acked = |ledger\[.*\] = |alive = |crashes = */

#ifndef N
#define N 3
#endif
#define CRASHES 2

/* Durable. */
byte wal_durable = 0;       /* batches 1..wal_durable are committed; batch s holds record rec[s] */
byte rec[N + 3];
byte landed_mark = 0;       /* the LANDED watermark */
byte dest_rows[N + 1];
bool ledger[N + 3];         /* the destination's ledger of batch ids (one lineage: the seq) */
byte acked = 0;             /* the source forgets records 1..acked */
/* The process. */
byte alive = 0;             /* which run is alive: the threads of an earlier one do nothing more */
byte crashes = 0;
bool finished = false;      /* the live run landed everything and ended */
chan to_land = [2] of { byte };     /* committed seqs, waiting for the lander (0: nothing more) */

inline land(s) {
  atomic {
    if
    :: !ledger[s] -> ledger[s] = true; dest_rows[rec[s]]++; assert(dest_rows[rec[s]] <= 1)
    :: else -> skip   /* the ledger holds the id: already applied */
    fi
  }
}

/* The reader and the committer as one thread: reading has no durable effect (the reader's position lives in memory
 * and the queue between them is emptied by a crash), so where a poll falls between two commits changes nothing
 * the properties see. */
proctype Committer(byte me; byte pos) {
  byte r, s;
  do
  :: atomic {
       alive == me ->
       if :: pos < acked -> pos = acked :: else -> skip fi;   /* what the source still has */
       if :: pos < N -> pos++; r = pos :: else -> r = 0 fi
     }
     if :: r == 0 -> s = 0; goto hand_on :: else -> skip fi;
#ifdef ACK_BEFORE_FSYNC
     atomic { if :: alive == me -> if :: r > acked -> acked = r :: else -> skip fi :: else -> goto done fi }
#endif
     atomic {   /* append + fdatasync: DiskWal::commit */
       if :: alive == me -> s = wal_durable + 1; rec[s] = r; wal_durable = s :: else -> goto done fi
     }
     atomic {   /* Source::acknowledge, after the commit */
       if
       :: alive == me ->
          if :: r > acked -> acked = r :: else -> skip fi;
          assert(acked <= rec[wal_durable])   /* never acknowledged past the WAL */
       :: else -> goto done
       fi
     }
hand_on:
     do   /* waits while the lander's queue is full; a thread of a dead run sends nothing */
     :: atomic { alive == me && nfull(to_land) -> to_land ! s; break }
     :: alive != me -> goto done
     od;
     if :: s == 0 -> goto done :: else -> skip fi
  :: alive != me -> goto done
  od;
done:
  skip
}

proctype Lander(byte me; byte from; byte upto) {
  byte s;
  /* First what the earlier run committed and did not land (the WAL's pending batches). */
  s = from + 1;
  do
  :: s <= upto ->
     atomic { if :: alive == me -> skip :: else -> goto done fi };
     land(s);
     atomic { if :: alive == me -> landed_mark = s :: else -> goto done fi };
     s++
  :: s > upto -> break
  od;
  do
  :: atomic { alive == me && nempty(to_land) -> to_land ? s }
     if :: s == 0 -> atomic { if :: alive == me -> finished = true :: else -> skip fi }; goto done :: else -> skip fi;
     land(s);   /* (lost answers and their retries: local_wal.pml) */
     atomic {
       if
       :: alive == me ->
#ifdef MARK_TO_COMMITTED
          landed_mark = wal_durable
#else
          landed_mark = s
#endif
       :: else -> goto done
       fi
     }
  :: alive != me -> goto done
  od;
done:
  skip
}

init {
  byte i, r;
  atomic { run Committer(0, 0); run Lander(0, 0, 0) }
  do
  :: atomic {
       !finished && crashes < CRASHES ->
       crashes++;
       alive++;   /* kill -9: the threads of the dead run stop where they are */
       do :: nempty(to_land) -> to_land ? r :: empty(to_land) -> break od;
       /* recovery: the source resumes after the newest durable batch; the lander starts with what waits */
       run Committer(alive, (wal_durable > 0 -> rec[wal_durable] : 0));
       run Lander(alive, landed_mark, wal_durable)
     }
  :: finished -> break
  od;
  (_nr_pr == 1);   /* every thread of every run has stopped */
  i = 1;
  do :: i <= N -> assert(dest_rows[i] == 1); i++ :: i > N -> break od
}
