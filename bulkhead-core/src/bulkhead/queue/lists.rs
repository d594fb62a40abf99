//! The eight lists of the queue (one per kind of waiter and class), threaded
//! through the slab of nodes by index, and the bit per class that says
//! which classes have a waiter.

use super::{CLASSES, Kind, NIL, Node, WaitQueue};

/// One doubly linked list of nodes, oldest at the head.
#[derive(Debug, Clone, Copy)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl List {
    pub(super) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    pub(super) fn is_empty(self) -> bool {
        self.head == NIL
    }
}

/// The lists of each kind, indexed by class.
pub(super) type Lists = [[List; CLASSES]; 2];

impl WaitQueue {
    /// The list a node belongs on.
    pub(super) fn list_of(&mut self, index: u32) -> &mut List {
        let Node { kind, class, .. } = self.nodes[index as usize];
        &mut self.lists[kind as usize][class as usize]
    }

    /// The list of `kind` and `class`.
    pub(super) fn list(&self, kind: Kind, class: u8) -> List {
        self.lists[kind as usize][class as usize]
    }

    /// Appends a waiter to the end (the newest) of its list.
    pub(super) fn link_back(&mut self, index: u32) {
        let tail = self.list_of(index).tail;
        let node = &mut self.nodes[index as usize];
        node.prev = tail;
        node.next = NIL;
        match tail {
            NIL => self.list_of(index).head = index,
            tail => self.nodes[tail as usize].next = index,
        }
        self.list_of(index).tail = index;
        self.linked(index);
    }

    /// Puts a waiter back at the head (the oldest end) of its list.
    pub(super) fn link_front(&mut self, index: u32) {
        let head = self.list_of(index).head;
        let node = &mut self.nodes[index as usize];
        node.prev = NIL;
        node.next = head;
        match head {
            NIL => self.list_of(index).tail = index,
            head => self.nodes[head as usize].prev = index,
        }
        self.list_of(index).head = index;
        self.linked(index);
    }

    fn linked(&mut self, index: u32) {
        let class = self.nodes[index as usize].class;
        self.classes_waiting |= 1 << class;
        self.waiting[class as usize] += 1;
        self.queued += 1;
    }

    /// Takes a waiter out of its list.
    pub(super) fn unlink(&mut self, index: u32) {
        let Node {
            prev, next, class, ..
        } = self.nodes[index as usize];
        match prev {
            NIL => self.list_of(index).head = next,
            prev => self.nodes[prev as usize].next = next,
        }
        match next {
            NIL => self.list_of(index).tail = prev,
            next => self.nodes[next as usize].prev = prev,
        }
        self.waiting[class as usize] -= 1;
        if self.waiting[class as usize] == 0 {
            self.classes_waiting &= !(1 << class);
        }
        self.queued -= 1;
    }

    /// Every queued waiter, list by list.
    pub(super) fn queued_indices(&self) -> Vec<u32> {
        let mut queued = Vec::with_capacity(self.queued as usize);
        for list in self.lists.iter().flatten() {
            let mut index = list.head;
            while index != NIL {
                queued.push(index);
                index = self.nodes[index as usize].next;
            }
        }
        queued
    }
}
