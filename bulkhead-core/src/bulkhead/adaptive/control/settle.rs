//! Putting a wanted limit into force within the floor, the ceiling, a cap
//! and the room of a resource's budget, and the live changes of those
//! bounds; the controller's snapshot.

use super::*;

impl Controller {
    /// The limit the algorithm wants in force.
    pub(super) fn in_force(&self) -> u32 {
        (self.estimate.floor() as u32).clamp(self.floor, self.ceiling)
    }

    pub(super) fn clamp(&self, limit: f64) -> f64 {
        limit.clamp(f64::from(self.floor), f64::from(self.ceiling))
    }

    /// Puts `wanted` in force, holding room for `reserve` (at least
    /// `wanted`: a probe keeps the room of the limit it will restore), as
    /// far as the budget's room and its fair share of it allow.
    pub(super) fn settle(&mut self, wanted: u32, reserve: u32) -> Change {
        let mut wanted = wanted.clamp(self.floor, self.ceiling);
        let mut reserve = reserve;
        if let Some(cap) = self.limit_cap {
            let allowed = cap.max(self.floor);
            reserve = reserve.min(allowed);
            if wanted > allowed {
                wanted = allowed;
                if self.phase == Phase::Steady {
                    // Work under the cap, and regrow fast to where the
                    // limit was once it is lifted.
                    self.slow_start_below = self.slow_start_below.max(self.estimate);
                    self.estimate = self.estimate.min(f64::from(allowed));
                }
            }
        }
        let mut give_back = 0;
        if let Some(room) = &mut self.room {
            // Announce the room it asks for; hold at most its fair share.
            let extra = reserve.max(wanted).saturating_sub(self.base);
            let keep = room.settle(extra, self.taken);
            give_back = self.taken.saturating_sub(keep);
            self.taken = keep;
            let allowed = self.base + self.taken;
            if wanted > allowed {
                wanted = allowed;
                if self.phase == Phase::Steady {
                    // Work from what the budget grants, not from a wish.
                    self.estimate = self.estimate.min(f64::from(allowed));
                }
            }
        }
        let from = std::mem::replace(&mut self.limit, wanted);
        Change {
            from,
            to: wanted,
            give_back,
        }
    }

    /// Gives `slots` of room back (after the semaphore's limit was
    /// lowered).
    pub(crate) fn give_back(&self, slots: u32) {
        if let Some(room) = &self.room {
            room.give(slots);
        }
    }

    /// Moves the ceiling (a manual `set_max_concurrent`, a reload); the
    /// limit in force is clamped to it.
    pub(crate) fn set_ceiling(&mut self, ceiling: u32) -> Change {
        self.ceiling = ceiling;
        self.floor = self.floor.min(ceiling);
        self.base = self.base.min(ceiling);
        self.estimate = self.clamp(self.estimate);
        self.slow_start_below = self.slow_start_below.min(f64::from(ceiling));
        self.resettle()
    }

    /// Works under `cap` from now on (a fleet resource's share; `None`: no
    /// cap).
    pub(crate) fn set_cap(&mut self, cap: Option<u32>) -> Change {
        self.limit_cap = cap;
        self.resettle()
    }

    /// Grows into `room` from now on (`None`: no budget).
    pub(crate) fn set_room(&mut self, room: Option<Arc<Room>>) -> Option<Change> {
        let same = match (&self.room, &room) {
            (Some(seat), Some(room)) => seat.is_at(room),
            (None, None) => true,
            _ => false,
        };
        if same {
            return None;
        }
        if let Some(old) = self.room.take() {
            // Give back what it holds, then leave the fair shares.
            old.give(self.taken);
        }
        self.taken = 0;
        self.room = room.map(Room::join);
        Some(self.resettle())
    }

    /// Keeps `reserved` of its resource's budget without taking room
    /// (`None`: only the floor); see `base`. The slots it holds stay as
    /// they were: a higher base gives back the room it no longer needs for
    /// them, a lower one counts them as taken from the room, past its
    /// capacity until the registry widens it by as much.
    pub(crate) fn set_reserved(&mut self, reserved: Option<u32>) -> Change {
        let base = reserved.map_or(self.floor, |r| r.max(self.floor));
        let base = base.min(self.ceiling);
        if let Some(room) = &self.room {
            let taken = (self.base + self.taken).saturating_sub(base);
            if taken < self.taken {
                room.give(self.taken - taken);
            } else {
                room.force(taken - self.taken);
            }
            self.taken = taken;
        }
        self.base = base;
        self.resettle()
    }

    /// Gives back what the room holds beyond its capacity, as far as this
    /// bulkhead can (down to its base).
    pub(crate) fn reclaim(&mut self) -> Option<Change> {
        let excess = self.room.as_ref()?.excess().min(self.taken);
        if excess == 0 {
            return None;
        }
        let keep = self.base + self.taken - excess;
        self.estimate = self.estimate.min(f64::from(keep));
        if let Phase::Probe { saved, cap, .. } = &mut self.phase {
            *saved = saved.min(f64::from(keep));
            *cap = (*cap).min(keep);
        }
        Some(self.resettle())
    }

    /// Settles the limit again after the ceiling, room or estimate moved.
    pub(super) fn resettle(&mut self) -> Change {
        let reserve = self.in_force();
        match &mut self.phase {
            Phase::Probe { saved, cap, .. } => {
                *saved = saved.clamp(f64::from(self.floor), f64::from(self.ceiling));
                let cap = (*cap).clamp(self.floor, reserve);
                self.settle(cap, reserve)
            }
            Phase::Steady => self.settle(reserve, reserve),
        }
    }

    pub(super) fn next_unit(&mut self) -> f64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// What the snapshot shows; `at` turns a stamp into an instant.
    pub(crate) fn snapshot(&self, at: impl Fn(u64) -> std::time::Instant) -> AdaptiveSnapshot {
        let duration = |nanos: f64| Duration::from_nanos(nanos.max(0.0) as u64);
        let long_term = match &self.algorithm {
            Algorithm::Gradient2(_, state) => state.long.get().map(duration),
            _ => None,
        };
        AdaptiveSnapshot {
            algorithm: self.algorithm.kind(),
            floor: self.floor,
            ceiling: self.ceiling,
            limit: self.limit,
            no_load: self.no_load.map(duration),
            recent: self.recent.map(duration),
            long_term,
            probing: matches!(self.phase, Phase::Probe { .. }),
            room_taken: self.room.as_ref().map(|_| self.taken),
            room_share: self.room.as_ref().map(Seat::share),
            windows: self.totals.windows,
            probes: self.totals.probes,
            successes: self.totals.successes,
            errors: self.totals.errors,
            drops: self.totals.drops,
            last_window_at: self.last_window_at.map(at),
        }
    }
}
