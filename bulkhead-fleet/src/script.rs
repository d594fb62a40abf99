//! The fleet's Lua scripts (`lua/`), the keys they work on, and their
//! replies. Each step runs as one script: atomic on Redis, and on Redis
//! Cluster too, since every key of a resource has the same hash tag.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisError, RedisResult, Script, ServerErrorKind, ToRedisArgs, Value};

/// `allocate.lua` then `acquire.lua`: join, renew, acknowledge, rebalance.
pub(crate) const ACQUIRE: &str = concat!(
    include_str!("lua/allocate.lua"),
    "\n",
    include_str!("lua/acquire.lua")
);
/// `leave.lua`: give the share back.
pub(crate) const LEAVE: &str = include_str!("lua/leave.lua");

/// The keys of one resource of one application:
/// `bulkhead:{<prefix>:<resource>}:meta` and `...:procs`. The part between
/// braces is the hash tag: Redis Cluster puts both in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    pub(crate) meta: String,
    pub(crate) procs: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str, resource: &str) -> Self {
        Keys {
            meta: format!("bulkhead:{{{prefix}:{resource}}}:meta"),
            procs: format!("bulkhead:{{{prefix}:{resource}}}:procs"),
        }
    }
}

/// What one `acquire` sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) seq: u64,
    pub(crate) acked: u64,
    pub(crate) seen_epoch: String,
    /// The bound on the calls in flight from now on.
    pub(crate) held: u32,
    pub(crate) demand: u32,
    pub(crate) lease_ms: u64,
    pub(crate) budget: u32,
    pub(crate) lease_valid: bool,
    pub(crate) ceiling: u32,
    /// When the lease of the reply to `acked` runs out, in ms on Redis's
    /// clock (0: no reply yet): a record missing before then was lost.
    pub(crate) acked_exp: u64,
    /// The fallback its `on_unreachable` asks for.
    pub(crate) asks: u32,
    /// The fallback it was last told, which it may use now.
    pub(crate) fallback: u32,
}

/// What one `acquire` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    /// `false` for a request older than one already applied: nothing
    /// changed.
    pub(crate) ok: bool,
    pub(crate) epoch: String,
    pub(crate) grant: u32,
    pub(crate) target: u32,
    pub(crate) processes: u32,
    pub(crate) budget: u32,
    pub(crate) recover_ms: u64,
    pub(crate) held: u32,
    pub(crate) owned: u32,
    /// The slots it may fall back to (see `lease`).
    pub(crate) fallback: u32,
    /// When its lease runs out, in ms on Redis's clock.
    pub(crate) exp: u64,
}

/// The two scripts, run with `EVALSHA`; on `NOSCRIPT` (a node that never
/// ran them: a promoted replica, a restarted node, `SCRIPT FLUSH`) with
/// `EVAL` and the script's body, which also loads it there.
///
/// Not redis-rs's `Script::invoke_async`: its fallback sends `SCRIPT
/// LOAD`, a command without a key, which a cluster client sends to every
/// primary (and which fails while one of them is down), and scripts
/// loaded that way are not replicated. `EVAL` carries the keys: it goes to
/// the node of their hash slot, like `EVALSHA`.
#[derive(Debug)]
pub(crate) struct Scripts {
    acquire: Lua,
    leave: Lua,
}

/// One script: its body and the SHA1 `EVALSHA` names it by.
#[derive(Debug)]
struct Lua {
    body: &'static str,
    sha: String,
}

/// The arguments of one call (`ARGV`), encoded once for `EVALSHA` and,
/// if needed, `EVAL`.
#[derive(Debug, Default)]
struct Args(Vec<Vec<u8>>);

impl Args {
    fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        arg.write_redis_args(&mut self.0);
        self
    }
}

impl Lua {
    fn new(body: &'static str) -> Self {
        Lua {
            body,
            sha: Script::new(body).get_hash().to_owned(),
        }
    }

    /// `EVALSHA <sha> 2 <meta> <procs> <args>`, and on `NOSCRIPT` the same
    /// with `EVAL <body>`.
    async fn run(
        &self,
        con: &mut impl ConnectionLike,
        keys: &Keys,
        args: &Args,
    ) -> RedisResult<Value> {
        match Self::call("EVALSHA", self.sha.as_bytes(), keys, args)
            .query_async(con)
            .await
        {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                Self::call("EVAL", self.body.as_bytes(), keys, args)
                    .query_async(con)
                    .await
            }
            other => other,
        }
    }

    fn call(command: &str, script: &[u8], keys: &Keys, args: &Args) -> Cmd {
        let mut cmd = redis::cmd(command);
        cmd.arg(script).arg(2).arg(&keys.meta).arg(&keys.procs);
        for arg in &args.0 {
            cmd.arg(arg.as_slice());
        }
        cmd
    }
}

/// The error for a node that answered `role` to `acquire`: it is not the
/// primary, and the script wrote nothing there. Of kind `READONLY`, as
/// the node's own refusal of a write would be: the connection looks the
/// primary up again.
fn not_primary(role: &str) -> RedisError {
    RedisError::from((
        ErrorKind::Server(ServerErrorKind::ReadOnly),
        "the node is not the primary",
        format!("it answered role:{role} to the fleet's script, which wrote nothing"),
    ))
}

/// `acquire`'s answer: a [`Reply`], or [`not_primary`] for its `replica`
/// status.
fn reply(value: Value) -> RedisResult<Reply> {
    let items: Vec<Value> = redis::from_redis_value(value)?;
    let status: Option<String> = items.first().map(redis::from_redis_value_ref).transpose()?;
    if status.as_deref() == Some("replica") {
        let role: Option<String> = items.get(1).map(redis::from_redis_value_ref).transpose()?;
        return Err(not_primary(role.as_deref().unwrap_or("unknown")));
    }
    type Raw = (String, String, u32, u32, u32, u32, u64, u32, u32, u32, u64);
    let raw: Raw = redis::from_redis_value(Value::Array(items))?;
    Ok(Reply {
        ok: raw.0 == "ok",
        epoch: raw.1,
        grant: raw.2,
        target: raw.3,
        processes: raw.4,
        budget: raw.5,
        recover_ms: raw.6,
        held: raw.7,
        owned: raw.8,
        fallback: raw.9,
        exp: raw.10,
    })
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            acquire: Lua::new(ACQUIRE),
            leave: Lua::new(LEAVE),
        }
    }

    /// Runs `acquire` for process `pid`. A node that is not the primary
    /// (the script's `replica` status) is an error of kind `READONLY`
    /// ([`not_primary`]).
    pub(crate) async fn acquire(
        &self,
        con: &mut impl ConnectionLike,
        keys: &Keys,
        pid: &str,
        request: &Request,
    ) -> RedisResult<Reply> {
        let args = Args::default()
            .arg(pid)
            .arg(request.seq)
            .arg(request.acked)
            .arg(&request.seen_epoch)
            .arg(request.held)
            .arg(request.demand)
            .arg(request.lease_ms)
            .arg(request.budget)
            .arg(u8::from(request.lease_valid))
            .arg(request.ceiling)
            .arg(request.acked_exp)
            .arg(request.asks)
            .arg(request.fallback);
        reply(self.acquire.run(con, keys, &args).await?)
    }

    /// Runs `leave` for process `pid`, with `held` calls still in flight.
    /// Returns 1 if it left, 0 if Redis had no lease of it, -1 if the
    /// request was stale.
    pub(crate) async fn leave(
        &self,
        con: &mut impl ConnectionLike,
        keys: &Keys,
        pid: &str,
        seq: u64,
        held: u32,
    ) -> RedisResult<i64> {
        let args = Args::default().arg(pid).arg(seq).arg(held);
        Ok(redis::from_redis_value(
            self.leave.run(con, keys, &args).await?,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use redis::aio::ConnectionLike;
    use redis::{Arg, Cmd, ErrorKind, Pipeline, RedisFuture, RedisResult, ServerErrorKind, Value};

    use super::{ACQUIRE, Keys, LEAVE, Request, Scripts};

    #[test]
    fn every_key_of_a_resource_has_one_hash_tag() {
        let keys = Keys::new("shop", "db");
        assert_eq!(keys.meta, "bulkhead:{shop:db}:meta");
        assert_eq!(keys.procs, "bulkhead:{shop:db}:procs");
    }

    /// A connection that records the commands it is sent and gives the
    /// answers it was told, in order.
    #[derive(Default)]
    struct Fake {
        sent: Vec<Vec<String>>,
        answers: VecDeque<RedisResult<Value>>,
    }

    impl ConnectionLike for Fake {
        fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
            self.sent.push(
                cmd.args_iter()
                    .map(|arg| match arg {
                        Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                        _ => "<cursor>".to_owned(),
                    })
                    .collect(),
            );
            let answer = self
                .answers
                .pop_front()
                .unwrap_or_else(|| Err((ErrorKind::Io, "no answer left").into()));
            Box::pin(async move { answer })
        }

        fn req_packed_commands<'a>(
            &'a mut self,
            _: &'a Pipeline,
            _: usize,
            _: usize,
        ) -> RedisFuture<'a, Vec<Value>> {
            Box::pin(async { Err((ErrorKind::Client, "no pipelines here").into()) })
        }

        fn get_db(&self) -> i64 {
            0
        }
    }

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn ok_reply() -> Value {
        let mut items = vec![bulk("ok"), bulk("e1")];
        items.extend([3, 4, 2, 10, 0, 3, 3, 5, 1_000].map(Value::Int));
        Value::Array(items)
    }

    fn no_script() -> RedisResult<Value> {
        Err((
            ErrorKind::Server(ServerErrorKind::NoScript),
            "An error was signalled by the server",
            "No matching script. Please use EVAL.".to_owned(),
        )
            .into())
    }

    fn request() -> Request {
        Request {
            seq: 7,
            acked: 6,
            seen_epoch: "e1".to_owned(),
            held: 3,
            demand: 4,
            lease_ms: 10_000,
            budget: 10,
            lease_valid: true,
            ceiling: 8,
            acked_exp: 99,
            asks: 5,
            fallback: 2,
        }
    }

    #[test]
    fn acquire_is_an_evalsha_with_both_keys_and_every_argument() {
        let scripts = Scripts::new();
        let keys = Keys::new("shop", "db");
        let mut con = Fake::default();
        con.answers.push_back(Ok(ok_reply()));
        let reply = block_on(scripts.acquire(&mut con, &keys, "p1", &request())).unwrap();
        assert!(reply.ok);
        assert_eq!((reply.grant, reply.target, reply.exp), (3, 4, 1_000));
        let sha = redis::Script::new(ACQUIRE).get_hash().to_owned();
        assert_eq!(
            con.sent,
            [vec![
                "EVALSHA",
                &sha,
                "2",
                &keys.meta,
                &keys.procs,
                "p1",
                "7",
                "6",
                "e1",
                "3",
                "4",
                "10000",
                "10",
                "1",
                "8",
                "99",
                "5",
                "2",
            ]]
        );
    }

    /// On a node that never ran the script (a promoted replica), the call
    /// is sent again as EVAL with the body, the same keys and arguments:
    /// never a SCRIPT LOAD, which a cluster client sends to every node.
    #[test]
    fn noscript_sends_eval_with_the_body_and_the_same_keys_and_arguments() {
        let scripts = Scripts::new();
        let keys = Keys::new("shop", "db");
        let mut con = Fake::default();
        con.answers.extend([no_script(), Ok(ok_reply())]);
        let reply = block_on(scripts.acquire(&mut con, &keys, "p1", &request())).unwrap();
        assert_eq!(reply.grant, 3);
        assert_eq!(con.sent.len(), 2, "{:?}", con.sent);
        assert_eq!(con.sent[0][0], "EVALSHA");
        assert_eq!(con.sent[1][..2], ["EVAL", ACQUIRE]);
        assert_eq!(con.sent[0][2..], con.sent[1][2..]);

        let mut con = Fake::default();
        con.answers.extend([no_script(), Ok(Value::Int(1))]);
        assert_eq!(
            block_on(scripts.leave(&mut con, &keys, "p1", 8, 0)).unwrap(),
            1
        );
        assert_eq!(con.sent.len(), 2, "{:?}", con.sent);
        assert_eq!(con.sent[1][..2], ["EVAL", LEAVE]);
        assert_eq!(
            con.sent[1][2..],
            ["2", &keys.meta, &keys.procs, "p1", "8", "0"]
        );
    }

    #[test]
    fn other_errors_are_not_retried() {
        let scripts = Scripts::new();
        let keys = Keys::new("shop", "db");
        let mut con = Fake::default();
        con.answers.push_back(Err((
            ErrorKind::Server(ServerErrorKind::ReadOnly),
            "An error was signalled by the server",
            "You can't write against a read only replica.".to_owned(),
        )
            .into()));
        let error = block_on(scripts.acquire(&mut con, &keys, "p1", &request())).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly));
        assert_eq!(con.sent.len(), 1);
    }

    /// F1: the script's `replica` status is a READONLY error that says
    /// what the node answered.
    #[test]
    fn a_replica_status_is_a_readonly_error_naming_the_role() {
        let scripts = Scripts::new();
        let keys = Keys::new("shop", "db");
        let mut con = Fake::default();
        con.answers
            .push_back(Ok(Value::Array(vec![bulk("replica"), bulk("slave")])));
        let error = block_on(scripts.acquire(&mut con, &keys, "p1", &request())).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly));
        assert_eq!(error.code(), Some("READONLY"));
        assert!(
            error.detail().unwrap_or_default().contains("role:slave"),
            "{error}"
        );
        assert!(error.to_string().contains("role:slave"), "{error}");
        assert_eq!(con.sent.len(), 1, "not retried");
    }

    #[test]
    fn a_malformed_reply_is_an_error_not_a_panic() {
        let scripts = Scripts::new();
        let keys = Keys::new("shop", "db");
        for value in [
            Value::Nil,
            Value::Int(3),
            Value::Array(vec![]),
            Value::Array(vec![bulk("ok"), bulk("e1")]),
            Value::Array(vec![bulk("replica")]),
        ] {
            let mut con = Fake::default();
            con.answers.push_back(Ok(value.clone()));
            let result = block_on(scripts.acquire(&mut con, &keys, "p1", &request()));
            assert!(result.is_err(), "{value:?}: {result:?}");
        }
    }
}
