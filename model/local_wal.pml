/* The local commit protocol of skipprd (DESIGN.md), as Spin checks it: one pipeline, a source of N records, the WAL
 * on DATA_DIR, a destination with the _skippr_batches ledger. Every step may be followed by a crash (at most
 * CRASHES), every landing may lose its answer (an unknown outcome), and DATA_DIR may be lost once (LOSE_DATA_DIR).
 * Each batch holds one source record, and a record's position is its number.
 *
 * Properties (checked by the asserts and at the end state):
 *  - at most once: no record lands twice in the destination, at any moment;
 *  - exactly once eventually: when the run ends every record is in the destination once;
 *  - the source is never acknowledged past what is durable in the WAL;
 *  - the newest segment, which holds the resume point, is on disk whenever the WAL holds a batch.
 * Broken variants (each must fail, with a trail), chosen with -D:
 *  ACK_BEFORE_FSYNC: the source is acknowledged before the record's fdatasync;
 *  NEW_ID_ON_RETRY: a retry after an unknown outcome lands under a new batch id;
 *  NO_LINEAGE: the ledger keys batches by seq only, so a fresh DATA_DIR's new batches look landed;
 *  DELETE_NEWEST: a landed segment is deleted even when it is the newest, taking the resume point with it.
 * story: wal_durable = |landed_mark = |lineage = |acked = |ledger\[.*\] = |lost_data_dir = |deleted = |crashes =  */

#ifndef N
#define N 3
#endif
#ifndef CRASHES
#define CRASHES 2
#endif

/* Durable in DATA_DIR (lost with it). */
byte wal_durable = 0;   /* records 1..wal_durable are in the WAL, fsynced: DiskWal::commit after its fdatasync */
byte landed_mark = 0;   /* the LANDED watermark record: DiskWal::mark_landed */
byte deleted = 0;       /* batches 1..deleted were in segments deleted once landed: delete_landed_segments_locked */
byte lineage = 0;       /* the WAL's lineage: a new one when DATA_DIR starts empty (PipelineStorage, sync fresh start) */
/* The destination (never lost): rows per record, and the ledger of batch ids landed (Postgres/DuckDB sinks). */
byte dest_rows[N + 1];
bool ledger[2 * (N + 1) + 2 * (N + 1)];  /* index: lineage * (N + 1) + seq, or seq alone with NO_LINEAGE */
byte ledger_tip = 0;    /* position_after of the newest landed batch: ledger_tip_sql */
/* The source: it forgets what was acknowledged (a queue, a file removed after it is read) unless re-readable. */
byte acked = 0;
bool rereadable = false;
/* Volatile: lost at a crash. */
byte appended = 0;      /* appended, not yet fsynced */
byte read_pos = 0;      /* the next record read is read_pos + 1 */
byte next_seq = 1;      /* the next batch's seq in this lineage; seq s holds record seq_record[s] */
byte seq_record[N + 3];
byte crashes = 0;
bool lost_data_dir = false;

#ifdef NO_LINEAGE
#define KEY(lin, seq) (seq)
#else
#define KEY(lin, seq) ((lin) * (N + 1) + (seq))
#endif

/* A crash between any two steps: what was not durable is gone; the run starts again (recover). */
#define MAYBE_CRASH if :: crashes < CRASHES -> crashes++; goto crashed :: true -> skip fi

inline land_batch(seq, key) {
  /* One transaction: rows and ledger row together, skipped when the ledger holds the id (land_new_batches). */
  atomic {
    if
    :: !ledger[key] ->
       dest_rows[seq_record[seq]]++;
       ledger[key] = true;
       if :: seq_record[seq] > ledger_tip -> ledger_tip = seq_record[seq] :: else -> skip fi
    :: else -> skip
    fi;
    assert(dest_rows[seq_record[seq]] <= 1)  /* at most once */
  }
}

active proctype Sync() {
  byte s, key, retry_key, hi;
  /* Either kind of source: one that forgets what was acknowledged (a queue, a file removed once read), or one that
   * can be read again from a position (a table, an object store). */
  if :: rereadable = false :: rereadable = true fi;
recover:
  /* Recovery (scan_wal): what is durable stays; the source resumes after the last durable record's position. With
   * DATA_DIR gone, a new lineage resumes from the destination's ledger tip (start_from_destination). */
  appended = wal_durable;
  /* The newest segment alone restores the resume point: it is never deleted while it is the newest. */
  assert(wal_durable == 0 || deleted < wal_durable);
  if
  :: wal_durable > 0 -> read_pos = seq_record[wal_durable]; next_seq = wal_durable + 1
  :: else -> read_pos = ledger_tip; next_seq = 1
  fi;
  do
  :: read_pos < N ->
     /* Read the next record (the read stage); a forgetting source no longer has what it acknowledged. */
     if :: !rereadable && read_pos < acked -> read_pos = acked :: else -> skip fi;
     if
     :: read_pos < N ->
        s = next_seq;
        seq_record[s] = read_pos + 1;
        appended = s;                          /* append the record: append_record_locked */
        MAYBE_CRASH;
#ifdef ACK_BEFORE_FSYNC
        acked = seq_record[s];
        MAYBE_CRASH;
#endif
        wal_durable = s;                       /* fdatasync: the batch is committed (DiskWal::commit) */
        MAYBE_CRASH;
        acked = seq_record[s];                 /* source_->acknowledge, after the commit (commit_stage) */
        assert(rereadable || acked <= seq_record[wal_durable]);  /* never acknowledged past the WAL */
        read_pos = seq_record[s];
        next_seq = s + 1;
        MAYBE_CRASH
     :: else -> skip
     fi
  :: landed_mark < wal_durable ->
     /* Land every committed batch not landed yet, as one group (land_stage, land_group). */
     hi = wal_durable;
     s = landed_mark + 1;
     do
     :: s <= hi ->
        key = KEY(lineage, s);
        land_batch(s, key);
        /* The answer may be lost: an unknown outcome, retried with the same batch id (or a new one, when broken). */
        if
        :: true -> skip
        :: true ->
#ifdef NEW_ID_ON_RETRY
           retry_key = KEY(1 - lineage, s);
#else
           retry_key = key;
#endif
           land_batch(s, retry_key)
        fi;
        MAYBE_CRASH;
        s++
     :: s > hi -> break
     od;
     landed_mark = hi;                         /* one LANDED record for the group: mark_landed */
     MAYBE_CRASH
#ifdef DELETE_NEWEST
  :: deleted < landed_mark ->
#else
  :: deleted < landed_mark && deleted + 1 < wal_durable ->
#endif
     deleted++;                                /* a segment whose batches all landed, never the newest */
     MAYBE_CRASH
  :: !lost_data_dir && rereadable ->
     /* DATA_DIR lost (the machine replaced): only a re-readable source can be resumed, from the destination. */
     lost_data_dir = true; wal_durable = 0; landed_mark = 0; deleted = 0; lineage = 1 - lineage; goto recover
  :: read_pos >= N && landed_mark == wal_durable -> break
  od;
  goto finished;
crashed:
  goto recover;
finished:
  /* Exactly once, eventually: every record the source offered is in the destination once. */
  s = 1;
  do
  :: s <= N -> assert(dest_rows[s] == 1); s++
  :: s > N -> break
  od
}
