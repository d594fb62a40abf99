//! The primary that a set of Sentinels names, found by our own resolver
//! (not redis-rs's `sentinel` feature: it takes the first valid answer,
//! compares no `config-epoch` and knows no majority; see
//! `docs/design/fleet-ha-35.md` §3.1).
//!
//! - **Lookup.** `SENTINEL MASTER <name>` goes to every configured
//!   Sentinel at once, each within a third of the response timeout (the
//!   lookup waits for every answer, so a Sentinel that never answers
//!   costs that much per lookup). An answer counts if its flags hold
//!   `master` and neither `s_down` nor `o_down`.
//! - **Choice** ([`choose`]). The primary is the address named at the
//!   highest `config-epoch` among the answers that count. It is accepted
//!   only if a majority of the *configured* Sentinels (n/2 + 1) name it at
//!   that epoch, and that epoch is not below the highest this resolver has
//!   accepted: a Sentinel set that went back (a stale or restored
//!   Sentinel) confirms nothing, unless the whole set went back together
//!   (every configured Sentinel answers, all naming one address at one
//!   epoch: redeployed without its `sentinel.conf`), which is followed
//!   rather than refused until the process restarts.
//! - **Confirmation** (F2, [`Resolver::confirm`]). After each `acquire`,
//!   a fresh lookup must name, by the same rule, the address the request
//!   went to; otherwise its grant is not applied (REG-019).
//! - **`+switch-master`.** One pub/sub connection per Sentinel listens
//!   for it; a message for the name marks the link switched, so that its
//!   connection is dropped before the next request. The listeners end
//!   with the resolver.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};
use tokio::task::{JoinHandle, JoinSet};

use super::failure;
use super::topology::{Addr, Sentinels, Topology};

/// What one Sentinel says of the master name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) addr: Addr,
    pub(crate) epoch: u64,
    /// Its flags hold `master`, and neither `s_down` nor `o_down`.
    pub(crate) valid: bool,
}

impl Answer {
    /// Reads the fields of a `SENTINEL MASTER` reply; `None` without an
    /// address.
    pub(crate) fn from_fields(fields: &HashMap<String, String>) -> Option<Answer> {
        let ip = fields.get("ip")?;
        let port = fields.get("port")?.parse().ok()?;
        let epoch = fields
            .get("config-epoch")
            .and_then(|e| e.parse().ok())
            .unwrap_or(0);
        let flags: Vec<&str> = fields
            .get("flags")
            .map(|f| f.split(',').collect())
            .unwrap_or_default();
        let valid =
            flags.contains(&"master") && !flags.contains(&"s_down") && !flags.contains(&"o_down");
        Some(Answer {
            addr: Addr::new(ip, port),
            epoch,
            valid,
        })
    }
}

/// The primary among `answers` of `configured` Sentinels, and its epoch,
/// by the rule of the module's header; `highest` is the highest epoch
/// accepted so far. The error says why none is.
pub(crate) fn choose(
    answers: &[Answer],
    configured: usize,
    highest: u64,
) -> Result<(Addr, u64), String> {
    let majority = configured / 2 + 1;
    let valid: Vec<&Answer> = answers.iter().filter(|a| a.valid).collect();
    let Some(epoch) = valid.iter().map(|a| a.epoch).max() else {
        return Err(format!(
            "no Sentinel majority names a primary: none of the {} answers of {configured} Sentinels names an up master",
            answers.len()
        ));
    };
    if epoch < highest {
        // A lower epoch is a stale Sentinel, unless the whole set went
        // back together (every Sentinel redeployed without its
        // sentinel.conf, or the name removed and monitored again): then
        // every configured Sentinel answers, and names one address at one
        // epoch, and that is the primary (the promotion hold of the
        // scripts covers its data). Otherwise a reset set would refuse
        // every request until the process restarts.
        let unanimous = answers.len() == configured
            && answers
                .iter()
                .all(|a| a.valid && a.epoch == epoch && a.addr == answers[0].addr);
        if !unanimous {
            return Err(format!(
                "Sentinel config-epoch went back: {epoch} after {highest}"
            ));
        }
    }
    // The address most named at that epoch (the first of them on a tie).
    let at_epoch: Vec<&Addr> = valid
        .iter()
        .filter(|a| a.epoch == epoch)
        .map(|a| &a.addr)
        .collect();
    let mut best: Option<(&Addr, usize)> = None;
    for addr in &at_epoch {
        let count = at_epoch.iter().filter(|a| *a == addr).count();
        if best.is_none_or(|(_, n)| count > n) {
            best = Some((addr, count));
        }
    }
    match best {
        Some((addr, count)) if count >= majority => Ok((addr.clone(), epoch)),
        Some((addr, count)) => Err(format!(
            "no Sentinel majority names {addr}: {count} of {configured} Sentinels at config-epoch {epoch}, {majority} needed"
        )),
        None => Err("no Sentinel majority names a primary".to_owned()),
    }
}

/// One configured Sentinel: how to reach it, and its connection once made.
struct Node {
    addr: Addr,
    client: Result<Client, String>,
    connection: Option<MultiplexedConnection>,
}

/// Finds and confirms the primary of one master name.
pub(crate) struct Resolver {
    name: String,
    nodes: Vec<Node>,
    timeout: Duration,
    /// The highest `config-epoch` accepted.
    highest: u64,
    /// Set by a `+switch-master` for the name.
    switched: Arc<AtomicBool>,
    listeners: Vec<JoinHandle<()>>,
    /// To scrub the Sentinels' messages.
    topology: Arc<Topology>,
}

impl Drop for Resolver {
    fn drop(&mut self) {
        for listener in &self.listeners {
            listener.abort();
        }
    }
}

impl Resolver {
    /// A resolver for `sentinels`, each Sentinel asked (connection
    /// included) within `timeout`. Its listeners start at the first lookup
    /// (on the driver's runtime).
    pub(crate) fn new(sentinels: &Sentinels, timeout: Duration) -> Self {
        let nodes = sentinels
            .nodes
            .iter()
            .map(|node| Node {
                addr: node.addr.clone(),
                client: node
                    .addr
                    .connection_info(sentinels.tls, &node.auth, 0)
                    .and_then(Client::open)
                    .map_err(|e| e.to_string()),
                connection: None,
            })
            .collect();
        Resolver {
            name: sentinels.name.clone(),
            nodes,
            timeout,
            highest: 0,
            switched: Arc::new(AtomicBool::new(false)),
            listeners: Vec::new(),
            topology: Arc::new(Topology::Sentinel(sentinels.clone())),
        }
    }

    /// Whether a `+switch-master` for the name came since the last call.
    pub(crate) fn switched(&self) -> bool {
        self.switched.swap(false, Ordering::AcqRel)
    }

    /// Starts a `+switch-master` listener per Sentinel, once.
    fn listen(&mut self) {
        if !self.listeners.is_empty() {
            return;
        }
        for node in &self.nodes {
            if let Ok(client) = &node.client {
                self.listeners.push(tokio::spawn(listen(
                    client.clone(),
                    self.name.clone(),
                    Arc::clone(&self.switched),
                )));
            }
        }
    }

    /// The primary and its epoch, by a fresh lookup.
    pub(crate) async fn resolve(&mut self) -> Result<(Addr, u64), String> {
        self.listen();
        let (answers, errors) = self.lookup().await;
        match choose(&answers, self.nodes.len(), self.highest) {
            Ok((addr, epoch)) => {
                self.highest = epoch;
                Ok((addr, epoch))
            }
            Err(reason) if errors.is_empty() => Err(reason),
            Err(reason) => Err(format!("{reason} ({})", errors.join("; "))),
        }
    }

    /// Whether a fresh lookup names `addr` (where a request went), by a
    /// majority, at an epoch not below the highest seen; the error is the
    /// reason why not (REG-019's).
    pub(crate) async fn confirm(&mut self, addr: &Addr) -> Result<(), String> {
        match self.resolve().await {
            Ok((named, _)) if &named == addr => Ok(()),
            Ok((named, epoch)) => Err(format!(
                "no Sentinel majority names {addr}: a majority names {named} at config-epoch {epoch}"
            )),
            Err(reason) if reason.starts_with("no Sentinel majority names a primary") => {
                Err(reason.replacen("a primary", &addr.to_string(), 1))
            }
            Err(reason) => Err(reason),
        }
    }

    /// `SENTINEL MASTER <name>` to every Sentinel at once: the answers,
    /// and what went wrong with the others (`host:port: error`).
    async fn lookup(&mut self) -> (Vec<Answer>, Vec<String>) {
        let mut asks = JoinSet::new();
        for (i, node) in self.nodes.iter_mut().enumerate() {
            let client = match &node.client {
                Ok(client) => client.clone(),
                Err(error) => {
                    let error = error.clone();
                    asks.spawn(async move { (i, None, Err(error)) });
                    continue;
                }
            };
            let connection = node.connection.take();
            let name = self.name.clone();
            let timeout = self.timeout;
            let topology = Arc::clone(&self.topology);
            asks.spawn(async move {
                let asked =
                    tokio::time::timeout(timeout, ask(client, connection, &name, timeout)).await;
                match asked {
                    Ok(Ok((connection, answer))) => (i, Some(connection), Ok(answer)),
                    Ok(Err(error)) => (i, None, Err(failure::sentinel_message(&error, &topology))),
                    Err(_) => (i, None, Err(format!("no answer within {timeout:?}"))),
                }
            });
        }
        let mut answers = Vec::new();
        let mut errors = Vec::new();
        while let Some(done) = asks.join_next().await {
            let Ok((i, connection, answer)) = done else {
                continue;
            };
            let Some(node) = self.nodes.get_mut(i) else {
                continue;
            };
            node.connection = connection;
            match answer {
                Ok(Some(answer)) => answers.push(answer),
                Ok(None) => errors.push(format!("{}: no address for {}", node.addr, self.name)),
                Err(error) => errors.push(format!("{}: {error}", node.addr)),
            }
        }
        errors.sort();
        (answers, errors)
    }
}

/// Asks one Sentinel, over `connection` or a new one.
async fn ask(
    client: Client,
    connection: Option<MultiplexedConnection>,
    name: &str,
    timeout: Duration,
) -> redis::RedisResult<(MultiplexedConnection, Option<Answer>)> {
    let mut connection = match connection {
        Some(connection) => connection,
        None => {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(timeout))
                .set_response_timeout(Some(timeout));
            client
                .get_multiplexed_async_connection_with_config(&config)
                .await?
        }
    };
    let fields: HashMap<String, String> = redis::cmd("SENTINEL")
        .arg("MASTER")
        .arg(name)
        .query_async(&mut connection)
        .await?;
    Ok((connection, Answer::from_fields(&fields)))
}

/// Listens for `+switch-master` on one Sentinel until aborted, and sets
/// `switched` on a message for `name` (`<name> <old ip> <old port> <new ip>
/// <new port>`); reconnects a second after losing it.
async fn listen(client: Client, name: String, switched: Arc<AtomicBool>) {
    let retry = Duration::from_secs(1);
    loop {
        if let Ok(Ok(mut pubsub)) = tokio::time::timeout(retry, client.get_async_pubsub()).await
            && pubsub.subscribe("+switch-master").await.is_ok()
        {
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                let payload = String::from_utf8_lossy(message.get_payload_bytes()).into_owned();
                if payload.split(' ').next() == Some(name.as_str()) {
                    switched.store(true, Ordering::Release);
                }
            }
        }
        tokio::time::sleep(retry).await;
    }
}

#[cfg(test)]
pub(crate) mod tests;
