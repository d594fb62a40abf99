//! The queue of callers waiting for a slot.
//!
//! Two FIFO lists, one of tasks and one of blocked threads, threaded through
//! a slab of nodes by index, so a waiter that gives up (timeout, drop) is
//! unlinked in O(1) and node storage is reused instead of allocated per wait.
//! A waiter holds a [`WaiterKey`] (index and generation); the generation makes
//! a stale key harmless after its node was reused.
//!
//! The queue is only ever touched under the semaphore's mutex.

use crate::clock::Wake;

const NIL: u32 = u32::MAX;

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
    wake: Option<Wake>,
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
}

impl WaitQueue {
    pub(super) const fn new() -> Self {
        WaitQueue {
            nodes: Vec::new(),
            free: NIL,
            lists: [List::EMPTY; 2],
            threads_next: false,
            queued: 0,
        }
    }

    /// Number of queued (not granted) waiters.
    pub(super) fn len(&self) -> u32 {
        self.queued
    }

    pub(super) fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Appends a waiter to the end of its list.
    pub(super) fn push(&mut self, kind: Kind, wake: Wake) -> WaiterKey {
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
                    wake: None,
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
        node.wake = Some(wake);
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

    /// Refreshes the waker of a queued task.
    pub(super) fn update_waker(&mut self, key: WaiterKey, cx: &std::task::Context<'_>) {
        if self.node(key).is_some() {
            if let Some(wake) = &mut self.nodes[key.index as usize].wake {
                wake.update(cx);
            }
        }
    }

    /// Removes a waiter, whatever its status, and returns the status it had.
    pub(super) fn remove(&mut self, key: WaiterKey) -> Status {
        let status = self.status(key);
        match status {
            Status::Gone => return status,
            Status::Queued => self.unlink(key.index),
            Status::Granted => {}
        }
        let free = self.free;
        let node = &mut self.nodes[key.index as usize];
        node.status = Status::Gone;
        node.generation = node.generation.wrapping_add(1);
        node.wake = None;
        node.next = free;
        self.free = key.index;
        status
    }

    /// Hands a slot to the next waiter: the oldest task or the oldest thread,
    /// alternating while both kinds wait. Returns how to wake it.
    pub(super) fn grant_next(&mut self) -> Option<Wake> {
        let tasks = self.lists[Kind::Task as usize].head;
        let threads = self.lists[Kind::Thread as usize].head;
        let index = match (tasks, threads) {
            (NIL, NIL) => return None,
            (task, NIL) => task,
            (NIL, thread) => thread,
            (task, thread) => {
                self.threads_next = !self.threads_next;
                if self.threads_next { task } else { thread }
            }
        };
        self.unlink(index);
        let node = &mut self.nodes[index as usize];
        node.status = Status::Granted;
        node.wake.take()
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
    use super::*;

    fn wake() -> Wake {
        Wake::Thread(std::thread::current())
    }

    #[test]
    fn each_kind_is_served_in_arrival_order() {
        let mut q = WaitQueue::new();
        let t1 = q.push(Kind::Task, wake());
        let t2 = q.push(Kind::Task, wake());
        assert!(q.grant_next().is_some());
        assert_eq!(q.status(t1), Status::Granted);
        assert_eq!(q.status(t2), Status::Queued);
        assert!(q.grant_next().is_some());
        assert_eq!(q.status(t2), Status::Granted);
        assert!(q.grant_next().is_none());
    }

    #[test]
    fn tasks_and_threads_alternate_when_both_wait() {
        let mut q = WaitQueue::new();
        let tasks: Vec<_> = (0..3).map(|_| q.push(Kind::Task, wake())).collect();
        let threads: Vec<_> = (0..3).map(|_| q.push(Kind::Thread, wake())).collect();
        let mut order = Vec::new();
        for _ in 0..6 {
            q.grant_next();
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
        let mut q = WaitQueue::new();
        let a = q.push(Kind::Thread, wake());
        let b = q.push(Kind::Thread, wake());
        let c = q.push(Kind::Thread, wake());
        assert_eq!(q.remove(b), Status::Queued);
        assert_eq!(q.len(), 2);
        q.grant_next();
        q.grant_next();
        assert_eq!(
            (q.status(a), q.status(c)),
            (Status::Granted, Status::Granted)
        );
        assert!(q.is_empty());
    }

    #[test]
    fn a_stale_key_does_not_touch_the_reused_node() {
        let mut q = WaitQueue::new();
        let old = q.push(Kind::Task, wake());
        q.remove(old);
        let new = q.push(Kind::Task, wake());
        assert_eq!(q.status(old), Status::Gone);
        assert_eq!(q.remove(old), Status::Gone);
        assert_eq!(q.status(new), Status::Queued);
        assert_eq!(q.nodes.len(), 1, "the node was reused");
    }
}
