//! The queue of callers waiting for a slot.
//!
//! Eight lists, one per kind of waiter (tasks, blocked threads) and class
//! (0 = Sheddable to 3 = Critical), threaded through a slab of nodes by
//! index, so a waiter that gives up (timeout, drop) is unlinked in O(1) and
//! node storage is reused instead of allocated per wait. A waiter holds a
//! [`WaiterKey`] (index and generation); the generation makes a stale key
//! harmless after its node was reused.
//!
//! A hand-off serves the highest class with a waiter among those the caller
//! says may take the slot (its *eligible* mask), then, within the class,
//! tasks and threads in turn while both wait, then the oldest of the list
//! chosen under `fifo`. Under `lifo` (adaptive LIFO), the newest of the
//! list chosen instead while its oldest has waited longer than the target.
//! Under `codel`, the oldest, but while the queue is overloaded, waiters
//! that have waited longer than twice the target are refused on the way
//! (see `codel.rs`): they are woken to leave empty-handed, and counted.
//!
//! Each waiter carries its deadline, so that a hand-off passes over a waiter
//! whose deadline has already passed instead of giving it a slot it may no
//! longer take, and the time it arrived (`since`), which the disciplines
//! other than first come, first served read.
//!
//! A blocked thread may be *offered* its slot rather than granted it: the
//! slot is its own as if granted, but until its thread has woken up to take
//! it, a sync newcomer of its class or above may take it instead
//! ([`WaitQueue::take_offer`]), and the waiter goes back where it was
//! served from in its list. The thread is already awake or waking, so the
//! slot does not idle while a parked thread is scheduled; a waiter loses
//! at most `barging` offers in a row (its next hand-off is a grant), and
//! none once its deadline has passed.
//!
//! The queue is only ever touched under the semaphore's mutex. Nothing here
//! drops or wakes a waker: every [`Wake`] leaving a node is returned to the
//! caller (in a [`Served`], or from [`WaitQueue::remove`]), which drops or
//! wakes it after unlocking (a waker's drop may run arbitrary code,
//! including releasing a slot of this very bulkhead).

mod codel;
mod lists;

use std::time::Instant;

use self::codel::Codel;
pub(crate) use self::codel::Discipline;
use self::lists::{List, Lists};
use crate::QueueDiscipline;
use crate::clock::Wake;

const NIL: u32 = u32::MAX;

/// How many classes of waiters there are (0 = Sheddable, 1 = Normal, 2 =
/// High, 3 = Critical).
pub(crate) const CLASSES: usize = 4;

/// The class of a caller that names none.
pub(crate) const NORMAL: u8 = 1;

/// An eligible mask naming every class: a hand-off any waiter may take.
pub(crate) const ALL_CLASSES: u8 = (1 << CLASSES) - 1;

/// How many offers in a row a waiting thread may lose to newcomers, by
/// default (see the module docs).
pub(super) const DEFAULT_BARGING: u32 = 16;

/// Which list a waiter is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An async caller, woken through its task's waker.
    Task = 0,
    /// A sync caller, blocked on its thread.
    Thread = 1,
}

/// Where a waiter stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
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
    /// Refused by a hand-off under the `codel` discipline (it had waited
    /// too long in a queue that stayed overloaded): it holds no slot, is
    /// out of its list, and was woken to leave empty-handed.
    Refused,
    /// Not a live waiter (never was, or already removed).
    Gone,
}

/// Identifies one waiter's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaiterKey {
    index: u32,
    generation: u32,
}

/// Who is queueing: what the queue needs to know of a waiter besides how
/// to wake it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub(crate) kind: Kind,
    /// 0 to 3, 3 the highest ([`NORMAL`] for a caller that names none).
    pub(crate) class: u8,
    /// When it gives up; `None`: never.
    pub(crate) deadline: Option<Instant>,
    /// When it started waiting, on the bulkhead's clock; `None`: unknown
    /// (it then counts as just arrived).
    pub(crate) since: Option<Instant>,
}

impl Arrival {
    /// A caller of class [`NORMAL`].
    pub(crate) const fn normal(
        kind: Kind,
        deadline: Option<Instant>,
        since: Option<Instant>,
    ) -> Self {
        Arrival {
            kind,
            class: NORMAL,
            deadline,
            since,
        }
    }
}

/// The place of the waiter a hand-off would consider first: its class,
/// then its ticket. The smaller `Order` goes first (the higher class, then
/// the older ticket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) class: u8,
    pub(crate) ticket: u64,
}

impl Ord for Order {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .class
            .cmp(&self.class)
            .then(self.ticket.cmp(&other.ticket))
    }
}

impl PartialOrd for Order {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What a hand-off did: the waiter it served, if any, and the waiters it
/// refused on the way (`codel`), all to be woken once no lock is held.
#[derive(Debug, Default)]
#[must_use = "the waiters served and refused must be woken after unlocking"]
pub(crate) struct Served {
    /// How to wake the waiter handed the slot; `None`: nobody was (the
    /// slot is still free).
    pub(crate) granted: Option<Wake>,
    /// How to wake the waiters refused, who hold nothing.
    pub(crate) refused: Vec<Wake>,
}

impl Served {
    /// Whether a waiter was handed the slot.
    pub(crate) fn is_granted(&self) -> bool {
        self.granted.is_some()
    }

    /// Moves every wake into `wakes` (to wake later with the others);
    /// returns whether a waiter was handed the slot.
    pub(crate) fn into_wakes(self, wakes: &mut Vec<Wake>) -> bool {
        let granted = self.granted.is_some();
        wakes.extend(self.granted);
        wakes.extend(self.refused);
        granted
    }

    /// Wakes every waiter served or refused (call with no lock held): every
    /// one is woken even if one of their wakers panics, and the first panic
    /// goes on afterwards.
    pub(crate) fn wake(self) {
        match (self.granted, self.refused.is_empty()) {
            (Some(granted), true) => granted.wake(),
            (None, true) => {}
            (granted, false) => crate::clock::wake_all(granted.into_iter().chain(self.refused)),
        }
    }
}

#[derive(Debug)]
struct Node {
    generation: u32,
    status: Status,
    kind: Kind,
    class: u8,
    prev: u32,
    next: u32,
    /// `None`: waits without a deadline.
    deadline: Option<Instant>,
    /// When it started waiting; `None`: unknown.
    since: Option<Instant>,
    /// Arrival order: across a pool's bulkheads on a pool, else in this
    /// queue (see [`WaitQueue::push`]).
    ticket: u64,
    wake: Option<Wake>,
    /// Offers of a slot that newcomers took from this waiter in a row.
    passed_over: u32,
    /// Whether the hand-off that served it took it from the newest end of
    /// its list (where a newcomer taking its offer puts it back).
    from_back: bool,
}

#[derive(Debug)]
pub(crate) struct WaitQueue {
    nodes: Vec<Node>,
    /// Head of the list of reusable nodes, linked through `next`.
    free: u32,
    lists: Lists,
    /// Bit `c` set while class `c` has a waiter in either list.
    classes_waiting: u8,
    /// Per class, when both of its lists have waiters, whether the next
    /// slot goes to a thread.
    threads_next: [bool; CLASSES],
    queued: u32,
    /// Queued waiters per class.
    waiting: [u32; CLASSES],
    /// The waiter whose slot a newcomer may take, if any ([`Status::Offered`]).
    offered: u32,
    /// How many offers in a row a waiter may lose to newcomers; 0 grants
    /// every slot outright (strict FIFO among threads).
    barging: u32,
    /// The highest ticket any waiter of this queue has had: a waiter
    /// queued off a pool takes the next one.
    last_ticket: u64,
    /// How the waiters of one class are ordered.
    discipline: Discipline,
    /// CoDel's state, under `codel`.
    codel: Codel,
    /// Waiters refused by `codel`, per class.
    refused: [u64; CLASSES],
}

impl WaitQueue {
    pub(crate) const fn new() -> Self {
        WaitQueue {
            nodes: Vec::new(),
            free: NIL,
            lists: [[List::EMPTY; CLASSES]; 2],
            classes_waiting: 0,
            threads_next: [false; CLASSES],
            queued: 0,
            waiting: [0; CLASSES],
            offered: NIL,
            barging: DEFAULT_BARGING,
            last_ticket: 0,
            discipline: Discipline::FIFO,
            codel: Codel::NEW,
            refused: [0; CLASSES],
        }
    }

    /// Sets how the waiters of one class are ordered (from then on: the
    /// waiters queued stay, ordered by the new discipline). A change starts
    /// CoDel's state afresh.
    pub(crate) fn set_discipline(&mut self, discipline: Discipline) {
        if discipline != self.discipline {
            self.discipline = discipline;
            self.codel = Codel::NEW;
        }
    }

    /// How the waiters of one class are ordered.
    pub(crate) fn discipline(&self) -> Discipline {
        self.discipline
    }

    /// How many waiters `codel` refused, per class, lowest class first.
    pub(crate) fn refused(&self) -> [u64; CLASSES] {
        self.refused
    }

    /// Sets how many offers in a row a waiting thread may lose to
    /// newcomers; 0 makes every hand-off a grant.
    pub(crate) fn set_barging(&mut self, barging: u32) {
        self.barging = barging;
    }

    /// Number of queued (not granted) waiters.
    pub(crate) fn len(&self) -> u32 {
        self.queued
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Whether a waiter of a class in `eligible` is queued (a slot that
    /// only other classes wait for is free for newcomers).
    #[allow(dead_code, reason = "for the class-aware hand-offs to call")]
    pub(crate) fn has_eligible(&self, eligible: u8) -> bool {
        self.classes_waiting & eligible != 0
    }

    /// Queued waiters per class, lowest class first.
    #[allow(dead_code, reason = "for the snapshot per class to call")]
    pub(crate) fn waiting_per_class(&self) -> [u32; CLASSES] {
        self.waiting
    }

    /// Appends a waiter that gives up at its deadline to the end of its
    /// list.
    ///
    /// Off a pool, the waiter's ticket comes from this queue: one past the
    /// highest any waiter here has had, so that tasks and threads keep
    /// their arrival order between them when a move into a pool re-tickets
    /// them ([`retick`](Self::retick)).
    pub(crate) fn push(&mut self, arrival: Arrival, wake: Wake) -> WaiterKey {
        let ticket = self.last_ticket.wrapping_add(1);
        self.push_ticketed(arrival, wake, ticket)
    }

    /// [`push`](Self::push) with the waiter's ticket in its pool's arrival
    /// order.
    pub(crate) fn push_ticketed(&mut self, arrival: Arrival, wake: Wake, ticket: u64) -> WaiterKey {
        // A class out of range (not one callers pass) is the highest.
        let class = arrival.class.min(CLASSES as u8 - 1);
        let index = match self.free {
            NIL => {
                // More than u32::MAX - 1 simultaneous waiters would need more
                // memory than any machine has; indices stay below NIL.
                self.nodes.push(Node {
                    generation: 0,
                    status: Status::Gone,
                    kind: arrival.kind,
                    class,
                    prev: NIL,
                    next: NIL,
                    deadline: None,
                    since: None,
                    ticket: 0,
                    wake: None,
                    passed_over: 0,
                    from_back: false,
                });
                (self.nodes.len() - 1) as u32
            }
            free => {
                self.free = self.nodes[free as usize].next;
                free
            }
        };
        let node = &mut self.nodes[index as usize];
        node.status = Status::Queued;
        node.kind = arrival.kind;
        node.class = class;
        node.deadline = arrival.deadline;
        node.since = arrival.since;
        node.ticket = ticket;
        node.wake = Some(wake);
        node.passed_over = 0;
        node.from_back = false;
        let key = WaiterKey {
            index,
            generation: node.generation,
        };
        self.last_ticket = self.last_ticket.max(ticket);
        self.link_back(index);
        key
    }

    fn node(&self, key: WaiterKey) -> Option<&Node> {
        self.nodes
            .get(key.index as usize)
            .filter(|n| n.generation == key.generation && n.status != Status::Gone)
    }

    pub(crate) fn status(&self, key: WaiterKey) -> Status {
        self.node(key).map_or(Status::Gone, |n| n.status)
    }

    /// Refreshes the waker of a queued task. Returns the waker it replaced,
    /// for the caller to drop after unlocking.
    #[must_use = "drop the replaced waker after unlocking"]
    pub(crate) fn update_waker(
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
    pub(crate) fn remove(&mut self, key: WaiterKey) -> (Status, Option<Wake>) {
        let status = self.status(key);
        match status {
            Status::Gone => return (status, None),
            Status::Queued => self.unlink(key.index),
            Status::Offered => self.offered = NIL,
            Status::Granted | Status::Expired | Status::Refused => {}
        }
        let free = self.free;
        let node = &mut self.nodes[key.index as usize];
        node.status = Status::Gone;
        node.generation = node.generation.wrapping_add(1);
        node.next = free;
        self.free = key.index;
        (status, node.wake.take())
    }

    /// Hands a slot to the next waiter of a class in `eligible` whose
    /// deadline is still ahead at `now` (`None`: the time is unknown,
    /// nobody counts as expired, and every discipline serves the oldest):
    /// the highest class first, then, within it, the next task or thread,
    /// alternating while both kinds wait, then the oldest or the newest of
    /// that list as the discipline says. Waiters found expired on the way
    /// are passed over (marked [`Status::Expired`], left for their own
    /// timers to wake); waiters `codel` refuses on the way are marked
    /// [`Status::Refused`] and returned in [`Served::refused`], to wake.
    ///
    /// The slot is granted outright ([`Status::Granted`]); see
    /// [`serve_next`](Self::serve_next) for a hand-off that may be offered.
    pub(crate) fn grant_next(&mut self, now: Option<Instant>, eligible: u8) -> Served {
        self.next(now, false, eligible)
    }

    /// As [`grant_next`](Self::grant_next), but a thread served is offered
    /// its slot ([`Status::Offered`]) rather than granted it, unless another
    /// waiter's offer is outstanding or newcomers already took
    /// `barging` offers from this one in a row.
    pub(crate) fn serve_next(&mut self, now: Option<Instant>, eligible: u8) -> Served {
        self.next(now, true, eligible)
    }

    /// A newcomer of `class` (a sync caller about to queue) takes the slot
    /// offered to a waiter of its class or below, unless the waiter's
    /// deadline has passed at `now`: the slot stays counted in flight, now
    /// the newcomer's, and the waiter goes back where it was served from in
    /// its list. Returns whether it took one.
    pub(crate) fn take_offer(&mut self, now: Option<Instant>, class: u8) -> bool {
        let index = self.offered;
        if index == NIL || self.is_expired(index, now) || self.nodes[index as usize].class > class {
            return false;
        }
        self.offered = NIL;
        let node = &mut self.nodes[index as usize];
        node.status = Status::Queued;
        node.passed_over += 1;
        if node.from_back {
            self.link_back(index);
        } else {
            self.link_front(index);
        }
        true
    }

    fn next(&mut self, now: Option<Instant>, may_offer: bool, eligible: u8) -> Served {
        let mut served = Served::default();
        loop {
            let Some((index, from_back)) = self.choose(now, eligible) else {
                return served;
            };
            self.unlink(index);
            if self.is_expired(index, now) {
                self.nodes[index as usize].status = Status::Expired;
                continue;
            }
            if self.codel_refuses(index, now) {
                let node = &mut self.nodes[index as usize];
                node.status = Status::Refused;
                self.refused[node.class as usize] += 1;
                // Its deadline has not passed: nothing else wakes it.
                served.refused.extend(node.wake.take());
                continue;
            }
            let node = &mut self.nodes[index as usize];
            node.from_back = from_back;
            let offer = may_offer
                && node.kind == Kind::Thread
                && node.passed_over < self.barging
                && self.offered == NIL;
            if offer {
                node.status = Status::Offered;
                self.offered = index;
                // The handle stays with the waiter: if a newcomer takes
                // the offer, the next hand-off wakes it again.
                served.granted = match &node.wake {
                    Some(Wake::Thread(thread)) => Some(Wake::Thread(thread.clone())),
                    _ => node.wake.take(),
                };
                return served;
            }
            node.status = Status::Granted;
            served.granted = node.wake.take();
            return served;
        }
    }

    /// The waiter a hand-off at `now` considers next among the classes in
    /// `eligible`, and whether it is at the newest end of its list; takes
    /// its kind's turn unless it is expired (a waiter passed over does not
    /// take its kind's turn).
    fn choose(&mut self, now: Option<Instant>, eligible: u8) -> Option<(u32, bool)> {
        let (kind, class, turn) = self.choose_list(eligible)?;
        let list = self.list(kind, class);
        let (index, from_back) = match (self.discipline.queue, now) {
            (QueueDiscipline::Lifo, Some(now))
                if self.sojourn(list.head, now) > Some(self.discipline.target) =>
            {
                (list.tail, true)
            }
            _ => (list.head, false),
        };
        if let Some(threads_next) = turn
            && !self.is_expired(index, now)
        {
            self.threads_next[class as usize] = threads_next;
        }
        Some((index, from_back))
    }

    /// The list a hand-off serves among the classes in `eligible`: the
    /// highest class with a waiter, then tasks and threads in turn.
    /// Returns its kind, class, and, when both kinds wait, the turn to
    /// record if the waiter chosen is served.
    fn choose_list(&self, eligible: u8) -> Option<(Kind, u8, Option<bool>)> {
        let waiting = self.classes_waiting & eligible & ALL_CLASSES;
        if waiting == 0 {
            return None;
        }
        let class = (u8::BITS - 1 - waiting.leading_zeros()) as u8;
        let tasks = self.list(Kind::Task, class);
        let threads = self.list(Kind::Thread, class);
        Some(match (tasks.is_empty(), threads.is_empty()) {
            (false, true) => (Kind::Task, class, None),
            (true, _) => (Kind::Thread, class, None),
            (false, false) => {
                let threads_next = !self.threads_next[class as usize];
                let kind = if threads_next {
                    Kind::Task
                } else {
                    Kind::Thread
                };
                (kind, class, Some(threads_next))
            }
        })
    }

    /// Gives the queued waiters new tickets from `next`, in the order of
    /// their old ones (a bulkhead moving to another pool: its waiters take
    /// their places in the new pool's arrival order, behind those already
    /// there). Waiters of one list keep their order; classes keep theirs.
    pub(crate) fn retick(&mut self, mut next: impl FnMut() -> u64) {
        let mut queued = self.queued_indices();
        queued.sort_by_key(|&index| self.nodes[index as usize].ticket);
        for index in queued {
            let ticket = next();
            self.nodes[index as usize].ticket = ticket;
            self.last_ticket = self.last_ticket.max(ticket);
        }
    }

    /// The class and ticket of the waiter a hand-off among the classes in
    /// `eligible` would consider first (under a discipline that may serve
    /// the newest, the oldest of its list, which stands for the list in a
    /// pool's arrival order), if one waits.
    pub(crate) fn next_order(&self, eligible: u8) -> Option<Order> {
        let (kind, class, _) = self.choose_list(eligible)?;
        let head = self.list(kind, class).head;
        Some(Order {
            class,
            ticket: self.nodes[head as usize].ticket,
        })
    }

    /// How long a waiter has waited at `now`, if it is known when it
    /// arrived.
    fn sojourn(&self, index: u32, now: Instant) -> Option<std::time::Duration> {
        let since = self.nodes[index as usize].since?;
        Some(now.saturating_duration_since(since))
    }

    /// Under `codel`, feeds the sojourn of the waiter a hand-off at `now`
    /// considers to CoDel's state; whether that waiter is refused.
    fn codel_refuses(&mut self, index: u32, now: Option<Instant>) -> bool {
        if self.discipline.queue != QueueDiscipline::Codel {
            return false;
        }
        let Some((now, sojourn)) = now.and_then(|now| Some((now, self.sojourn(index, now)?)))
        else {
            return false;
        };
        self.codel.refuses(now, sojourn, self.discipline)
    }

    fn is_expired(&self, index: u32, now: Option<Instant>) -> bool {
        let deadline = self.nodes[index as usize].deadline;
        now.zip(deadline)
            .is_some_and(|(now, deadline)| now >= deadline)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
