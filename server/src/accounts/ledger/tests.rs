//! Each phase of `Writer::apply`, and the retry of a failed batch, on SQLite and on PostgreSQL
//! (`TEST_DATABASE_URL`, else the local server; skipped when unreachable unless `CI` is set).

use std::collections::HashSet;

use super::batch::Batch;
use super::writer as writer_task;
use super::*;

const PG_ADMIN_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";

fn suffix() -> String {
    crate::accounts::secrets::random_base62(12).to_ascii_lowercase()
}

/// A PostgreSQL database of one test, dropped with this guard.
struct Dropped(Option<String>);

impl Drop for Dropped {
    fn drop(&mut self) {
        let Some(name) = self.0.take() else { return };
        let admin = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
        // A runtime of its own: the test's is ending.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(pool) = sqlx::AnyPool::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&pool)
                    .await;
                }
            });
        })
        .join();
    }
}

/// A migrated database of one test: SQLite in a temp dir, or a new PostgreSQL database.
async fn database(backend: Backend) -> Option<(Db, Dropped)> {
    let url = match backend {
        Backend::Sqlite => {
            let dir = std::env::temp_dir().join(format!("ss-ledger-{}", suffix()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            (
                format!("sqlite://{}/db.sqlite?mode=rwc", dir.display()),
                None,
            )
        }
        Backend::Postgres => {
            let admin =
                std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
            sqlx::any::install_default_drivers();
            let pool = match sqlx::AnyPool::connect(&admin).await {
                Ok(p) => p,
                Err(e) if std::env::var_os("CI").is_none() => {
                    eprintln!("NOTICE: PostgreSQL test skipped, {admin}: {e}");
                    return None;
                }
                Err(e) => panic!("PostgreSQL at {admin} is unreachable and CI is set: {e}"),
            };
            let name = format!("t_ledger_{}", suffix());
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&pool)
                .await
                .expect("create the test database");
            pool.close().await;
            let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
            (format!("{base}/{name}"), Some(name))
        }
    };
    let (url, name) = url;
    let guard = Dropped(name);
    let db = Db::connect_with(&url, "normal").await.expect("connect");
    Some((db, guard))
}

/// Runs `test` on SQLite and on PostgreSQL.
macro_rules! on_both {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn sqlite() {
                let (db, _guard) = database(Backend::Sqlite).await.expect("sqlite");
                ($body)(db.clone()).await;
                db.close().await;
            }
            #[tokio::test]
            async fn postgres() {
                if let Some((db, _guard)) = database(Backend::Postgres).await {
                    ($body)(db.clone()).await;
                    db.close().await;
                }
            }
        }
    };
}

fn writer(db: &Db) -> Writer {
    Writer {
        db: db.clone(),
        last_used: HashMap::new(),
        balances: HashMap::new(),
        pending: Vec::new(),
    }
}

async fn account(db: &Db, id: &str, balance: i64) {
    sqlx::query("INSERT INTO accounts (id, email, balance, created_at) VALUES ($1, $2, $3, 0)")
        .bind(id)
        .bind(format!("{id}@example.com"))
        .bind(balance)
        .execute(&db.write)
        .await
        .expect("account");
    // The books stay balanced: the opening balance is a grant.
    sqlx::query(
        "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
         VALUES ('grant', $1, $1, $2, 'done', 0, 0)",
    )
    .bind(id)
    .bind(balance)
    .execute(&db.write)
    .await
    .expect("grant");
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, key_hash, prefix, created_at) VALUES ($1, $2, $1, 'ss_x', 0)",
    )
    .bind(format!("key_{id}"))
    .bind(id)
    .execute(&db.write)
    .await
    .expect("key");
}

async fn balance(db: &Db, id: &str) -> i64 {
    let (b,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
        .bind(id)
        .fetch_one(&db.read)
        .await
        .expect("balance");
    b
}

async fn charge_state(db: &Db, request_id: &str) -> Option<String> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT state FROM credit_entries WHERE kind = 'charge' AND ref = $1")
            .bind(request_id)
            .fetch_optional(&db.read)
            .await
            .expect("charge");
    row.map(|r| r.0)
}

fn record(account: &str, request_id: &str, credits: i64) -> CallRecord {
    CallRecord {
        request_id: request_id.into(),
        account_id: account.into(),
        key_id: format!("key_{account}"),
        key_prefix: "ss_x".into(),
        endpoint: "/v1/test".into(),
        status: 200,
        credits,
    }
}

fn reserve(
    account: &str,
    request_id: &str,
    price: i64,
) -> (Op, oneshot::Receiver<LedgerResult<Reservation>>) {
    let (reply, rx) = oneshot::channel();
    let op = Op::Reserve {
        account_id: account.into(),
        request_id: request_id.into(),
        price,
        reply,
    };
    (op, rx)
}

fn settle(record: CallRecord) -> (Op, oneshot::Receiver<LedgerResult<bool>>) {
    let (reply, rx) = oneshot::channel();
    (Op::Settle { record, reply }, rx)
}

fn pending(account: &str, request_id: &str, price: i64) -> PendingHold {
    PendingHold {
        account_id: account.into(),
        request_id: request_id.into(),
        price,
    }
}

fn batch<'a>(ops: &[Op]) -> Batch<'a> {
    Batch {
        at: now(),
        cache: false,
        outcomes: ops.iter().map(|_| None).collect(),
        seen: HashMap::new(),
        holds: Vec::new(),
    }
}

on_both!(
    pending_holds_are_taken_or_dropped_per_account,
    |db: Db| async move {
        account(&db, "a", 10).await;
        account(&db, "b", 3).await;
        let mut w = writer(&db);
        w.balances.insert("b".into(), 100);
        let holds = [
            pending("a", "r1", 4),
            pending("a", "r2", 5),
            pending("b", "r3", 4),
        ];
        let mut b = batch(&[]);
        let mut tx = db.begin_write().await.expect("tx");
        b.write_pending(&mut tx, &holds, &mut w.balances)
            .await
            .expect("phase");
        tx.commit().await.expect("commit");
        // a pays for both of its holds at once; b cannot, so its hold is dropped and its count forgotten.
        assert_eq!(b.holds, vec![("r1", "a", -4), ("r2", "a", -5)]);
        assert_eq!(b.seen.get("a"), Some(&1));
        assert!(!b.seen.contains_key("b"));
        assert!(!w.balances.contains_key("b"));
        assert_eq!(balance(&db, "a").await, 1);
        assert_eq!(balance(&db, "b").await, 3);
    }
);

on_both!(
    reservations_are_grouped_then_served_one_by_one,
    |db: Db| async move {
        account(&db, "a", 10).await;
        account(&db, "b", 5).await;
        let (r1, _) = reserve("a", "r1", 3);
        let (r2, _) = reserve("b", "r2", 3);
        let (r3, _) = reserve("a", "r3", 3);
        let (r4, _) = reserve("b", "r4", 3);
        let ops = [r1, r2, r3, r4];
        let mut b = batch(&ops);
        let mut tx = db.begin_write().await.expect("tx");
        b.reserve(&mut tx, &ops).await.expect("phase");
        tx.commit().await.expect("commit");
        let held = |remaining| Some(Outcome::Reserved(Reservation::Held { remaining }));
        // a pays for its group (6 of 10) in one statement; b cannot pay 6 of 5, so its first
        // reservation is held and its second finds the balance too low.
        assert_eq!(b.outcomes[0], held(7));
        assert_eq!(b.outcomes[2], held(4));
        assert_eq!(b.outcomes[1], held(2));
        assert_eq!(
            b.outcomes[3],
            Some(Outcome::Reserved(Reservation::Insufficient { balance: 2 }))
        );
        assert_eq!(b.holds.len(), 3);
        assert_eq!((b.seen["a"], b.seen["b"]), (4, 2));
        assert_eq!((balance(&db, "a").await, balance(&db, "b").await), (4, 2));
    }
);

on_both!(
    holds_are_written_and_settled_in_one_statement_each,
    |db: Db| async move {
        account(&db, "a", 10).await;
        let mut b = batch(&[]);
        b.holds = vec![("r1", "a", -2), ("r2", "a", -3)];
        let mut tx = db.begin_write().await.expect("tx");
        b.insert_holds(&mut tx).await.expect("holds");
        // r9 was never held: a settlement finds nothing for it.
        let (s1, _) = settle(record("a", "r1", 2));
        let (s9, _) = settle(record("a", "r9", 2));
        let ops = [s1, s9];
        let settled = b.settle(&mut tx, &ops).await.expect("settle");
        tx.commit().await.expect("commit");
        assert_eq!(settled, HashSet::from(["r1".to_string()]));
        assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("settled"));
        assert_eq!(charge_state(&db, "r2").await.as_deref(), Some("held"));
    }
);

on_both!(
    releases_refund_and_unsettled_calls_are_free,
    |db: Db| async move {
        account(&db, "a", 10).await;
        let mut w = writer(&db);
        let (r1, _) = reserve("a", "r1", 4);
        w.apply(&[r1], &[]).await.expect("reserve");
        assert_eq!(balance(&db, "a").await, 6);
        let (s2, _) = settle(record("a", "r2", 4));
        let ops = [
            Op::Release {
                request_id: "r1".into(),
                record: Some(record("a", "r1", 4)),
                reply: None,
            },
            s2,
            Op::Log {
                record: record("a", "r3", 0),
            },
        ];
        let mut b = batch(&ops);
        let mut tx = db.begin_write().await.expect("tx");
        let calls = b
            .release_and_record(&mut tx, &ops, &HashSet::new())
            .await
            .expect("phase");
        tx.commit().await.expect("commit");
        assert_eq!(b.seen.get("a"), Some(&10));
        assert_eq!(balance(&db, "a").await, 10);
        assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("released"));
        let credits: Vec<(&str, i64)> = calls
            .iter()
            .map(|c| (c.request_id.as_str(), c.credits))
            .collect();
        assert_eq!(credits, vec![("r1", 0), ("r2", 0), ("r3", 0)]);
        assert_eq!(b.outcomes[1], Some(Outcome::Settled(false)));
        assert!(ledger_balanced(&db).await);
    }
);

on_both!(
    calls_are_logged_and_last_use_written_once_a_minute,
    |db: Db| async move {
        account(&db, "a", 10).await;
        let calls = [record("a", "r1", 1), record("a", "r2", 1)];
        let b = batch(&[]);
        let mut tx = db.begin_write().await.expect("tx");
        b.log_calls(&mut tx, &calls).await.expect("log");
        let used = b
            .touch_keys(&mut tx, &calls, &HashMap::new())
            .await
            .expect("keys");
        assert_eq!(used, vec!["key_a"]);
        // Written less than a minute ago: not again.
        let recent = HashMap::from([("key_a".to_string(), b.at)]);
        let again = b.touch_keys(&mut tx, &calls, &recent).await.expect("keys");
        assert!(again.is_empty());
        tx.commit().await.expect("commit");
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM calls WHERE account_id = 'a'")
            .fetch_one(&db.read)
            .await
            .expect("calls");
        assert_eq!(n, 2);
        let (last,): (Option<i64>,) =
            sqlx::query_as("SELECT last_used_at FROM api_keys WHERE id = 'key_a'")
                .fetch_one(&db.read)
                .await
                .expect("key");
        assert_eq!(last, Some(b.at));
    }
);

on_both!(
    a_failed_batch_is_retried_one_operation_at_a_time,
    |db: Db| async move {
        account(&db, "a", 10).await;
        // A call already recorded under r0: settling another call with that request id breaks the
        // calls table's primary key, so the batch's transaction fails.
        let mut w = writer(&db);
        w.apply(
            &[Op::Log {
                record: record("a", "r0", 0),
            }],
            &[],
        )
        .await
        .expect("first call");
        let (r1, reserved) = reserve("a", "r1", 3);
        let (bad, settled_bad) = settle(record("a", "r0", 0));
        let (r2, reserved_2) = reserve("a", "r2", 2);
        w.run_part(vec![r1, bad, r2], Vec::new()).await;
        assert_eq!(
            reserved.await.expect("answer").expect("held"),
            Reservation::Held { remaining: 7 }
        );
        assert!(matches!(
            settled_bad.await.expect("answer"),
            Err(LedgerError::WriteFailed(_))
        ));
        assert_eq!(
            reserved_2.await.expect("answer").expect("held"),
            Reservation::Held { remaining: 5 }
        );
        assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("held"));
        assert_eq!(charge_state(&db, "r2").await.as_deref(), Some("held"));
        assert_eq!(balance(&db, "a").await, 5);
        assert!(ledger_balanced(&db).await);
    }
);

on_both!(
    the_writer_answers_and_a_stopped_ledger_says_so,
    |db: Db| async move {
        account(&db, "a", 10).await;
        let (tx, rx) = mpsc::channel(16);
        let task = tokio::spawn(writer_task(db.clone(), rx));
        let ledger = Ledger { writers: vec![tx] };
        assert_eq!(
            ledger.reserve("a", "r1", 4).await.expect("reserve"),
            Reservation::Held { remaining: 6 }
        );
        assert!(ledger.settle(record("a", "r1", 4)).await.expect("settle"));
        ledger.shutdown().await;
        task.await.expect("writer");
        assert!(matches!(
            ledger.reserve("a", "r2", 1).await,
            Err(LedgerError::Stopped)
        ));
        assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("settled"));
    }
);

async fn ledger_balanced(db: &Db) -> bool {
    crate::accounts::ledger_mismatches(db)
        .await
        .expect("books")
        .is_empty()
}
