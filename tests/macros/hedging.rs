//! `#[hedge]` through generated wrappers and a function with a body: the
//! hedge answers when the first attempt is slow, the slow attempt is
//! dropped with its slot, and each attempt gets its own clone of the
//! arguments.

use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bulkhead::events::{Event, HedgeEventKind};
use bulkhead::{Registry, resilient};
use tokio::sync::oneshot;

use crate::support::{ServiceError, manual, poll};

#[resilient]
pub trait Replicas: Send + Sync {
    #[hedge(max_hedged = 1, delay = "50ms")]
    #[bulkhead(max_concurrent = 2)]
    async fn find(&self, query: String) -> Result<String, ServiceError>;

    #[hedge(name = "replicas-send", delay = "50ms")]
    fn find_send(&self, query: &str) -> impl Future<Output = Result<String, ServiceError>> + Send;
}

/// A call's query, and how the test answers it.
type Call = (String, oneshot::Sender<Result<String, ServiceError>>);

/// Each call waits for the test to answer it, and says which query it got.
#[derive(Default, Clone)]
pub struct Calls(Arc<Mutex<Vec<Call>>>);

impl Calls {
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn query(&self, i: usize) -> String {
        self.0.lock().unwrap()[i].0.clone()
    }

    fn answer(&self, i: usize, answer: &str) {
        let (_, tx) = std::mem::replace(
            &mut self.0.lock().unwrap()[i],
            (String::new(), oneshot::channel().0),
        );
        let _ = tx.send(Ok(answer.to_owned()));
    }

    fn dropped(&self, i: usize) -> bool {
        self.0.lock().unwrap()[i].1.is_closed()
    }

    fn call(
        &self,
        query: String,
    ) -> impl Future<Output = Result<String, ServiceError>> + Send + use<> {
        let (tx, rx) = oneshot::channel();
        self.0.lock().unwrap().push((query, tx));
        async move {
            rx.await
                .unwrap_or_else(|_| Err(ServiceError::Backend("unanswered".into())))
        }
    }
}

impl Replicas for Calls {
    async fn find(&self, query: String) -> Result<String, ServiceError> {
        self.call(query).await
    }

    fn find_send(&self, query: &str) -> impl Future<Output = Result<String, ServiceError>> + Send {
        self.call(query.to_owned())
    }
}

fn id(method: &str) -> String {
    format!("{}::Replicas#{method}", module_path!())
}

#[test]
fn a_hedged_method_answers_from_the_hedge_and_frees_the_slow_attempts_slot() {
    let (clock, registry) = manual();
    let calls = Calls::default();
    let replicas = ResilientReplicas::new(calls.clone(), &registry).unwrap();
    let slots = registry.bulkhead(&id("find(String)")).unwrap();
    let mut events = registry.subscribe();

    let mut found = pin!(replicas.find("rust".to_owned()));
    assert!(poll(found.as_mut()).is_pending());
    clock.advance(Duration::from_millis(49));
    assert!(poll(found.as_mut()).is_pending());
    assert_eq!(calls.count(), 1, "no hedge before the delay");
    clock.advance(Duration::from_millis(1));
    assert!(poll(found.as_mut()).is_pending());
    assert_eq!(calls.count(), 2);
    assert_eq!(slots.concurrent_calls(), 2);
    assert_eq!(
        (calls.query(0), calls.query(1)),
        ("rust".to_owned(), "rust".to_owned()),
        "each attempt got its own clone"
    );

    calls.answer(1, "from the hedge");
    let Poll::Ready(Ok(answer)) = poll(found.as_mut()) else {
        panic!("the hedge answered");
    };
    assert_eq!(answer, "from the hedge");
    assert!(calls.dropped(0), "the slow attempt was dropped");
    assert_eq!(slots.concurrent_calls(), 0, "with its slot");
    let kinds: Vec<HedgeEventKind> = events
        .drain()
        .filter_map(|event| match event {
            Event::Hedge(event) => Some(event.kind),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            HedgeEventKind::Started { hedge: 1 },
            HedgeEventKind::Won { hedge: 1 }
        ]
    );
    let hedge = registry.hedge(&id("find(String)")).unwrap().snapshot();
    assert_eq!(
        (hedge.max_hedged, hedge.current_delay),
        (1, Some(Duration::from_millis(50)))
    );
}

#[test]
fn a_hedged_send_future_stays_send_and_answers_first_come() {
    fn send<T: Send>(value: T) -> T {
        value
    }
    let (clock, registry) = manual();
    let calls = Calls::default();
    let replicas = ResilientReplicas::new(calls.clone(), &registry).unwrap();
    let mut found = pin!(send(replicas.find_send("tea")));
    assert!(poll(found.as_mut()).is_pending());
    clock.advance(Duration::from_millis(50));
    assert!(poll(found.as_mut()).is_pending());
    calls.answer(0, "first after all");
    assert!(matches!(poll(found.as_mut()), Poll::Ready(Ok(answer)) if answer == "first after all"));
    assert!(calls.dropped(1), "the hedge was dropped");
    assert!(registry.hedge("replicas-send").is_ok());
}

/// A body whose first run hangs: the hedge answers.
#[bulkhead::hedge(name = "hedged-body", max_hedged = 2, delay = "5ms")]
async fn hedged_body(
    runs: &std::sync::atomic::AtomicU32,
    query: &str,
) -> Result<String, ServiceError> {
    if runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
        std::future::pending::<()>().await;
    }
    Ok(format!("{query} found"))
}

#[tokio::test]
async fn a_hedged_function_runs_its_body_again_when_the_first_run_is_slow() {
    let runs = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(hedged_body(&runs, "tea").await.unwrap(), "tea found");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(Registry::global().hedge("hedged-body").is_ok());
}
