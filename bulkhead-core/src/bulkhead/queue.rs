//! The queue of callers waiting for a slot.
//!
//! Two FIFO lists, one of tasks and one of blocked threads, threaded through
//! a slab of nodes by index, so a waiter that gives up (timeout, drop) is
//! unlinked in O(1) and node storage is reused instead of allocated per wait.
//! A waiter holds a [`WaiterKey`] (index and generation); the generation makes
//! a stale key harmless after its node was reused.
//!
//! Each waiter carries its deadline, so that a hand-off passes over a waiter
//! whose deadline has already passed instead of giving it a slot it may no
//! longer take.
//!
//! A blocked thread may be *offered* its slot rather than granted it: the
//! slot is its own as if granted, but until its thread has woken up to take
//! it, a sync newcomer may take it instead ([`WaitQueue::take_offer`]), and
//! the waiter goes back to the head of its list. The thread is already
//! awake or waking, so the slot does not idle while a parked thread is
//! scheduled; a waiter loses at most `barging` offers in a row
//! (its next hand-off is a grant), and none once its deadline has passed.
//!
//! The queue is only ever touched under the semaphore's mutex. Nothing here
//! drops or wakes a waker: every [`Wake`] leaving a node is returned to the
//! caller, which drops or wakes it after unlocking (a waker's drop may run
//! arbitrary code, including releasing a slot of this very bulkhead).

use std::time::Instant;

use crate::clock::Wake;

const NIL: u32 = u32::MAX;

/// How many offers in a row a waiting thread may lose to newcomers, by
/// default (see the module docs).
pub(super) const DEFAULT_BARGING: u32 = 16;

/// Which list a waiter is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An async caller, woken through its task's waker.
    Task = 0,
    /// A sync caller, blocked on its thread.
    Thread = 1,
}

/// Where a waiter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    /// Waiting in its list.
    Queued,
    /// Handed a slot by a releaser; the slot is counted as in flight and is
    /// the waiter's to use or to pass on.
    Granted,
    /// Handed a slot as [`Status::Granted`], which a sync newcomer may still
    /// take while the waiter's thread wakes up (at most one waiter at a
    /// time is offered its slot).
    Offered,
    /// Passed over by a hand-off because its deadline had passed: it holds
    /// no slot and is out of its list. Its own timer wakes it (its deadline
    /// has passed on the clock), and it then leaves empty-handed.
    Expired,
    /// Not a live waiter (never was, or already removed).
    Gone,
}

/// Identifies one waiter's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WaiterKey {
    index: u32,
    generation: u32,
}

#[derive(Debug)]
struct Node {
    generation: u32,
    status: Status,
    kind: Kind,
    prev: u32,
    next: u32,
    /// `None`: waits without a deadline.
    deadline: Option<Instant>,
    /// Arrival order: across a pool's bulkheads on a pool, else in this
    /// queue (see [`WaitQueue::push`]).
    ticket: u64,
    wake: Option<Wake>,
    /// Offers of a slot that newcomers took from this waiter in a row.
    passed_over: u32,
}

#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

#[derive(Debug)]
pub(super) struct WaitQueue {
    nodes: Vec<Node>,
    /// Head of the list of reusable nodes, linked through `next`.
    free: u32,
    lists: [List; 2],
    /// When both lists have waiters, whether the next slot goes to a thread.
    threads_next: bool,
    queued: u32,
    /// The waiter whose slot a newcomer may take, if any ([`Status::Offered`]).
    offered: u32,
    /// How many offers in a row a waiter may lose to newcomers; 0 grants
    /// every slot outright (strict FIFO among threads).
    barging: u32,
    /// The highest ticket any waiter of this queue has had: a waiter
    /// queued off a pool takes the next one.
    last_ticket: u64,
}

impl WaitQueue {
    pub(super) const fn new() -> Self {
        WaitQueue {
            nodes: Vec::new(),
            free: NIL,
            lists: [List::EMPTY; 2],
            threads_next: false,
            queued: 0,
            offered: NIL,
            barging: DEFAULT_BARGING,
            last_ticket: 0,
        }
    }

    /// Sets how many offers in a row a waiting thread may lose to
    /// newcomers; 0 makes every hand-off a grant.
    pub(super) fn set_barging(&mut self, barging: u32) {
        self.barging = barging;
    }

    /// Number of queued (not granted) waiters.
    pub(super) fn len(&self) -> u32 {
        self.queued
    }

    pub(super) fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Appends a waiter that gives up at `deadline` to the end of its list.
    ///
    /// Off a pool, the waiter's ticket comes from this queue: one past the
    /// highest any waiter here has had, so that tasks and threads keep
    /// their arrival order between them when a move into a pool re-tickets
    /// them ([`retick`](Self::retick)).
    pub(super) fn push(&mut self, kind: Kind, wake: Wake, deadline: Option<Instant>) -> WaiterKey {
        let ticket = self.last_ticket.wrapping_add(1);
        self.push_ticketed(kind, wake, deadline, ticket)
    }

    /// [`push`](Self::push) with the waiter's ticket in its pool's arrival
    /// order.
    pub(super) fn push_ticketed(
        &mut self,
        kind: Kind,
        wake: Wake,
        deadline: Option<Instant>,
        ticket: u64,
    ) -> WaiterKey {
        let index = match self.free {
            NIL => {
                // More than u32::MAX - 1 simultaneous waiters would need more
                // memory than any machine has; indices stay below NIL.
                self.nodes.push(Node {
                    generation: 0,
                    status: Status::Gone,
                    kind,
                    prev: NIL,
                    next: NIL,
                    deadline: None,
                    ticket: 0,
                    wake: None,
                    passed_over: 0,
                });
                (self.nodes.len() - 1) as u32
            }
            free => {
                self.free = self.nodes[free as usize].next;
                free
            }
        };
        let tail = self.lists[kind as usize].tail;
        let node = &mut self.nodes[index as usize];
        node.status = Status::Queued;
        node.kind = kind;
        node.prev = tail;
        node.next = NIL;
        node.deadline = deadline;
        node.ticket = ticket;
        self.last_ticket = self.last_ticket.max(ticket);
        node.wake = Some(wake);
        node.passed_over = 0;
        let key = WaiterKey {
            index,
            generation: node.generation,
        };
        match tail {
            NIL => self.lists[kind as usize].head = index,
            tail => self.nodes[tail as usize].next = index,
        }
        self.lists[kind as usize].tail = index;
        self.queued += 1;
        key
    }

    fn node(&self, key: WaiterKey) -> Option<&Node> {
        self.nodes
            .get(key.index as usize)
            .filter(|n| n.generation == key.generation && n.status != Status::Gone)
    }

    pub(super) fn status(&self, key: WaiterKey) -> Status {
        self.node(key).map_or(Status::Gone, |n| n.status)
    }

    /// Refreshes the waker of a queued task. Returns the waker it replaced,
    /// for the caller to drop after unlocking.
    #[must_use = "drop the replaced waker after unlocking"]
    pub(super) fn update_waker(
        &mut self,
        key: WaiterKey,
        cx: &std::task::Context<'_>,
    ) -> Option<Wake> {
        if self.node(key).is_some()
            && let Some(wake) = &mut self.nodes[key.index as usize].wake
        {
            return wake.update(cx);
        }
        None
    }

    /// Removes a waiter, whatever its status. Returns the status it had and
    /// its waker, for the caller to drop after unlocking.
    #[must_use = "drop the waker after unlocking"]
    pub(super) fn remove(&mut self, key: WaiterKey) -> (Status, Option<Wake>) {
        let status = self.status(key);
        match status {
            Status::Gone => return (status, None),
            Status::Queued => self.unlink(key.index),
            Status::Offered => self.offered = NIL,
            Status::Granted | Status::Expired => {}
        }
        let free = self.free;
        let node = &mut self.nodes[key.index as usize];
        node.status = Status::Gone;
        node.generation = node.generation.wrapping_add(1);
        node.next = free;
        self.free = key.index;
        (status, node.wake.take())
    }

    /// Hands a slot to the next waiter whose deadline is still ahead at
    /// `now` (`None`: the time is unknown, nobody counts as expired): the
    /// oldest task or the oldest thread, alternating while both kinds wait.
    /// Waiters found expired on the way are passed over (marked
    /// [`Status::Expired`], left for their own timers to wake). Returns how
    /// to wake the waiter served, `None` if nobody was.
    ///
    /// The slot is granted outright ([`Status::Granted`]); see
    /// [`serve_next`](Self::serve_next) for a hand-off that may be offered.
    pub(super) fn grant_next(&mut self, now: Option<Instant>) -> Option<Wake> {
        self.next(now, false)
    }

    /// As [`grant_next`](Self::grant_next), but a thread served is offered
    /// its slot ([`Status::Offered`]) rather than granted it, unless another
    /// waiter's offer is outstanding or newcomers already took
    /// `barging` offers from this one in a row.
    pub(super) fn serve_next(&mut self, now: Option<Instant>) -> Option<Wake> {
        self.next(now, true)
    }

    /// A newcomer (a sync caller about to queue) takes the slot offered to a
    /// waiter, unless the waiter's deadline has passed at `now`: the slot
    /// stays counted in flight, now the newcomer's, and the waiter goes back
    /// to the head of its list. Returns whether it took one.
    pub(super) fn take_offer(&mut self, now: Option<Instant>) -> bool {
        let index = self.offered;
        if index == NIL || self.is_expired(index, now) {
            return false;
        }
        self.offered = NIL;
        let node = &mut self.nodes[index as usize];
        node.status = Status::Queued;
        node.passed_over += 1;
        self.link_front(index);
        true
    }

    fn next(&mut self, now: Option<Instant>, may_offer: bool) -> Option<Wake> {
        loop {
            let tasks = self.lists[Kind::Task as usize].head;
            let threads = self.lists[Kind::Thread as usize].head;
            let index = match (tasks, threads) {
                (NIL, NIL) => return None,
                (task, NIL) => task,
                (NIL, thread) => thread,
                (task, thread) => {
                    // A waiter passed over does not take its kind's turn.
                    let threads_next = !self.threads_next;
                    let index = if threads_next { task } else { thread };
                    if !self.is_expired(index, now) {
                        self.threads_next = threads_next;
                    }
                    index
                }
            };
            self.unlink(index);
            let expired = self.is_expired(index, now);
            let node = &mut self.nodes[index as usize];
            if expired {
                node.status = Status::Expired;
                continue;
            }
            let offer = may_offer
                && node.kind == Kind::Thread
                && node.passed_over < self.barging
                && self.offered == NIL;
            if offer {
                node.status = Status::Offered;
                self.offered = index;
                // The handle stays with the waiter: if a newcomer takes
                // the offer, the next hand-off wakes it again.
                return match &node.wake {
                    Some(Wake::Thread(thread)) => Some(Wake::Thread(thread.clone())),
                    _ => node.wake.take(),
                };
            }
            node.status = Status::Granted;
            return node.wake.take();
        }
    }

    /// Gives the queued waiters new tickets from `next`, in the order of
    /// their old ones (a bulkhead moving to another pool: its waiters take
    /// their places in the new pool's arrival order, behind those already
    /// there). Waiters of one kind keep their order.
    pub(super) fn retick(&mut self, mut next: impl FnMut() -> u64) {
        let mut queued = Vec::with_capacity(self.queued as usize);
        for list in self.lists {
            let mut index = list.head;
            while index != NIL {
                queued.push(index);
                index = self.nodes[index as usize].next;
            }
        }
        queued.sort_by_key(|&index| self.nodes[index as usize].ticket);
        for index in queued {
            let ticket = next();
            self.nodes[index as usize].ticket = ticket;
            self.last_ticket = self.last_ticket.max(ticket);
        }
    }

    /// The ticket of the waiter [`grant_next`](Self::grant_next) would
    /// consider first, if any waits.
    pub(super) fn next_ticket(&self) -> Option<u64> {
        let tasks = self.lists[Kind::Task as usize].head;
        let threads = self.lists[Kind::Thread as usize].head;
        let index = match (tasks, threads) {
            (NIL, NIL) => return None,
            (task, NIL) => task,
            (NIL, thread) => thread,
            (task, thread) => {
                // As grant_next chooses.
                if self.threads_next { thread } else { task }
            }
        };
        Some(self.nodes[index as usize].ticket)
    }

    fn is_expired(&self, index: u32, now: Option<Instant>) -> bool {
        let deadline = self.nodes[index as usize].deadline;
        now.zip(deadline)
            .is_some_and(|(now, deadline)| now >= deadline)
    }

    /// Puts a waiter back at the head of its list.
    fn link_front(&mut self, index: u32) {
        let kind = self.nodes[index as usize].kind as usize;
        let head = self.lists[kind].head;
        let node = &mut self.nodes[index as usize];
        node.prev = NIL;
        node.next = head;
        match head {
            NIL => self.lists[kind].tail = index,
            head => self.nodes[head as usize].prev = index,
        }
        self.lists[kind].head = index;
        self.queued += 1;
    }

    fn unlink(&mut self, index: u32) {
        let Node {
            kind, prev, next, ..
        } = self.nodes[index as usize];
        match prev {
            NIL => self.lists[kind as usize].head = next,
            prev => self.nodes[prev as usize].next = next,
        }
        match next {
            NIL => self.lists[kind as usize].tail = prev,
            next => self.nodes[next as usize].prev = prev,
        }
        self.queued -= 1;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    fn wake() -> Wake {
        Wake::Thread(std::thread::current())
    }

    fn push(q: &mut WaitQueue, kind: Kind) -> WaiterKey {
        q.push(kind, wake(), None)
    }

    #[test]
    fn each_kind_is_served_in_arrival_order() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let t1 = push(&mut q, Kind::Task);
        let t2 = push(&mut q, Kind::Task);
        assert!(q.grant_next(Some(now)).is_some());
        assert_eq!(q.status(t1), Status::Granted);
        assert_eq!(q.status(t2), Status::Queued);
        assert!(q.grant_next(Some(now)).is_some());
        assert_eq!(q.status(t2), Status::Granted);
        assert!(q.grant_next(Some(now)).is_none());
    }

    #[test]
    fn a_move_into_a_pool_tickets_waiters_queued_off_one_in_arrival_order() {
        let mut q = WaitQueue::new();
        let first = push(&mut q, Kind::Thread);
        let second = push(&mut q, Kind::Task);
        let third = push(&mut q, Kind::Thread);
        let mut pool_tickets = 40..;
        q.retick(|| pool_tickets.next().unwrap());
        let ticket = |key: WaiterKey| q.nodes[key.index as usize].ticket;
        assert_eq!((ticket(first), ticket(second), ticket(third)), (40, 41, 42));
        // Queued off a pool again after a move away: behind all of them.
        let fourth = push(&mut q, Kind::Task);
        assert_eq!(q.nodes[fourth.index as usize].ticket, 43);
    }

    #[test]
    fn tasks_and_threads_alternate_when_both_wait() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let tasks: Vec<_> = (0..3).map(|_| push(&mut q, Kind::Task)).collect();
        let threads: Vec<_> = (0..3).map(|_| push(&mut q, Kind::Thread)).collect();
        let mut order = Vec::new();
        for _ in 0..6 {
            let _ = q.grant_next(Some(now));
            let granted = |keys: &[WaiterKey]| {
                keys.iter()
                    .filter(|k| q.status(**k) == Status::Granted)
                    .count()
            };
            order.push((granted(&tasks), granted(&threads)));
        }
        assert_eq!(order, [(1, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3)]);
    }

    #[test]
    fn a_removed_waiter_leaves_the_middle_of_its_list() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let a = push(&mut q, Kind::Thread);
        let b = push(&mut q, Kind::Thread);
        let c = push(&mut q, Kind::Thread);
        let (status, wake) = q.remove(b);
        assert_eq!(status, Status::Queued);
        assert!(wake.is_some(), "the waker is handed back, not dropped");
        assert_eq!(q.len(), 2);
        let _ = q.grant_next(Some(now));
        let _ = q.grant_next(Some(now));
        assert_eq!(
            (q.status(a), q.status(c)),
            (Status::Granted, Status::Granted)
        );
        assert!(q.is_empty());
    }

    #[test]
    fn a_stale_key_does_not_touch_the_reused_node() {
        let mut q = WaitQueue::new();
        let old = push(&mut q, Kind::Task);
        let _ = q.remove(old);
        let new = push(&mut q, Kind::Task);
        assert_eq!(q.status(old), Status::Gone);
        assert_eq!(q.remove(old).0, Status::Gone);
        assert_eq!(q.status(new), Status::Queued);
        assert_eq!(q.nodes.len(), 1, "the node was reused");
    }

    #[test]
    fn a_hand_off_passes_over_waiters_whose_deadline_has_passed() {
        let start = Instant::now();
        let soon = Some(start + Duration::from_millis(10));
        let later = Some(start + Duration::from_millis(20));
        let mut q = WaitQueue::new();
        let early = q.push(Kind::Task, wake(), soon);
        let patient = q.push(Kind::Task, wake(), later);
        let forever = q.push(Kind::Task, wake(), None);
        // At exactly the first deadline, that waiter is expired.
        assert!(
            q.grant_next(Some(start + Duration::from_millis(10)))
                .is_some()
        );
        assert_eq!(q.status(early), Status::Expired);
        assert_eq!(q.status(patient), Status::Granted);
        assert_eq!(q.len(), 1);
        // Long after every deadline, a waiter without one is still served.
        assert!(
            q.grant_next(Some(start + Duration::from_secs(3600)))
                .is_some()
        );
        assert_eq!(q.status(forever), Status::Granted);
        // The expired waiter leaves when it notices, with its waker.
        let (status, wake) = q.remove(early);
        assert_eq!(status, Status::Expired);
        assert!(wake.is_some());
        assert_eq!(q.status(early), Status::Gone);
    }

    #[test]
    fn a_hand_off_finding_only_expired_waiters_serves_nobody() {
        let start = Instant::now();
        let mut q = WaitQueue::new();
        let task = q.push(Kind::Task, wake(), Some(start));
        let thread = q.push(Kind::Thread, wake(), Some(start));
        assert!(q.grant_next(Some(start)).is_none());
        assert!(q.is_empty());
        assert_eq!(q.status(task), Status::Expired);
        assert_eq!(q.status(thread), Status::Expired);
    }

    #[test]
    fn a_thread_is_offered_its_slot_and_a_newcomer_may_take_it() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let waiter = push(&mut q, Kind::Thread);
        assert!(q.serve_next(Some(now)).is_some());
        assert_eq!(q.status(waiter), Status::Offered);
        assert!(q.is_empty(), "an offered waiter is out of its list");
        assert!(q.take_offer(Some(now)));
        assert_eq!(q.status(waiter), Status::Queued);
        assert_eq!(q.len(), 1, "back in its list");
        assert!(!q.take_offer(Some(now)), "nothing is offered any more");
        // Served again, it still has its waker.
        assert!(q.serve_next(Some(now)).is_some());
        let (status, wake) = q.remove(waiter);
        assert_eq!(status, Status::Offered);
        assert!(wake.is_some());
    }

    #[test]
    fn a_waiter_loses_at_most_barging_offers_in_a_row() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let waiter = push(&mut q, Kind::Thread);
        for _ in 0..DEFAULT_BARGING {
            assert!(q.serve_next(Some(now)).is_some());
            assert!(q.take_offer(Some(now)), "a newcomer takes the offer");
        }
        assert!(q.serve_next(Some(now)).is_some());
        assert_eq!(q.status(waiter), Status::Granted);
        assert!(!q.take_offer(Some(now)), "a granted slot is the waiter's");
    }

    #[test]
    fn a_passed_over_waiter_goes_back_ahead_of_later_ones() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let first = push(&mut q, Kind::Thread);
        let second = push(&mut q, Kind::Thread);
        assert!(q.serve_next(Some(now)).is_some());
        assert!(q.take_offer(Some(now)));
        assert!(q.serve_next(Some(now)).is_some());
        assert_eq!(q.status(first), Status::Offered);
        assert_eq!(q.status(second), Status::Queued);
    }

    #[test]
    fn no_offer_is_taken_once_the_waiters_deadline_has_passed() {
        let start = Instant::now();
        let deadline = start + Duration::from_millis(10);
        let mut q = WaitQueue::new();
        let waiter = q.push(Kind::Thread, wake(), Some(deadline));
        assert!(q.serve_next(Some(start)).is_some());
        assert!(!q.take_offer(Some(deadline)));
        assert_eq!(q.status(waiter), Status::Offered, "the slot stays its own");
    }

    #[test]
    fn tasks_are_granted_their_slot_never_offered_it() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let task = push(&mut q, Kind::Task);
        assert!(q.serve_next(Some(now)).is_some());
        assert_eq!(q.status(task), Status::Granted);
        assert!(!q.take_offer(Some(now)));
    }

    #[test]
    fn one_offer_is_outstanding_at_a_time() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        let first = push(&mut q, Kind::Thread);
        let second = push(&mut q, Kind::Thread);
        let _ = q.serve_next(Some(now));
        let _ = q.serve_next(Some(now));
        assert_eq!(q.status(first), Status::Offered);
        assert_eq!(q.status(second), Status::Granted);
        // Once the offered waiter took its slot, the next one may be offered.
        let _ = q.remove(first);
        let third = push(&mut q, Kind::Thread);
        let _ = q.serve_next(Some(now));
        assert_eq!(q.status(third), Status::Offered);
    }

    #[test]
    fn without_barging_every_slot_is_granted() {
        let now = Instant::now();
        let mut q = WaitQueue::new();
        q.set_barging(0);
        let waiter = push(&mut q, Kind::Thread);
        let _ = q.serve_next(Some(now));
        assert_eq!(q.status(waiter), Status::Granted);
    }

    #[test]
    fn an_expired_waiter_does_not_take_its_kinds_turn() {
        let start = Instant::now();
        let mut q = WaitQueue::new();
        let expired_task = q.push(Kind::Task, wake(), Some(start));
        let task = q.push(Kind::Task, wake(), None);
        let thread = q.push(Kind::Thread, wake(), None);
        // Tasks go first; the expired task is passed over and the next task
        // is served in its place.
        assert!(q.grant_next(Some(start)).is_some());
        assert_eq!(q.status(expired_task), Status::Expired);
        assert_eq!(q.status(task), Status::Granted);
        assert_eq!(q.status(thread), Status::Queued);
    }
}
