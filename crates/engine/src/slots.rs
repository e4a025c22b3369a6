//! A worker's operations in flight, by tag.
//!
//! With thousands of connections, each answer arrives at a connection whose
//! state has left the processor's caches since its last one, and every
//! separate piece of memory the worker touches to complete it is one more
//! miss (docs/explanations/client-cost.md). So the first slot (tag 0) lives inline, in the
//! worker itself, and the free tags are a stack threaded through the slots
//! rather than a vector beside them: a connection with one operation in
//! flight at a time, as every connection of a closed loop at `-P 1` is,
//! reads no memory outside its worker to start and complete one. Tags 1
//! and up are made as first needed, up to the depth, so a connection
//! allowed a thousand in flight that only ever has a few holds a few.

use tokio::time::Instant;

use crate::Tag;

/// No tag: the end of the free stack.
const NONE: Tag = Tag::MAX;

/// One operation in flight: when it was meant to start and was sent, and
/// where its outcome is recorded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub intended: Instant,
    pub sent: Instant,
    pub kind: usize,
    pub phase: usize,
    pub busy: bool,
    /// The next free tag below this one on the free stack (free slots only).
    next: Tag,
}

impl Slot {
    fn free(at: Instant, next: Tag) -> Slot {
        Slot {
            intended: at,
            sent: at,
            kind: 0,
            phase: 0,
            busy: false,
            next,
        }
    }
}

#[repr(C)]
pub(crate) struct Slots {
    /// Slots that are busy.
    busy: usize,
    /// The top of the free stack, or [`NONE`].
    free: Tag,
    /// The most slots there may be.
    depth: usize,
    first: Slot,
    rest: Vec<Slot>,
}

impl Slots {
    /// Room for `depth` operations (at least one); tag 0 is made now.
    pub fn new(depth: usize, at: Instant) -> Slots {
        Slots {
            first: Slot::free(at, NONE),
            rest: Vec::new(),
            depth: depth.max(1),
            free: 0,
            busy: 0,
        }
    }

    /// Slots made so far.
    fn made(&self) -> usize {
        1 + self.rest.len()
    }

    /// Whether an operation may start: a free slot, or room for a new one.
    #[inline]
    pub fn has_free(&self) -> bool {
        self.free != NONE || self.made() < self.depth
    }

    /// Operations in flight.
    #[inline]
    pub fn busy(&self) -> usize {
        self.busy
    }

    /// A free slot's tag, made if none is free and fewer than the depth
    /// exist; `None` when all are busy. The slot stays free until
    /// [`Slots::fill`].
    pub fn take(&mut self, at: Instant) -> Option<Tag> {
        if self.free != NONE {
            let tag = self.free;
            self.free = self.slot(tag).next;
            return Some(tag);
        }
        if self.made() >= self.depth {
            return None;
        }
        let tag = Tag::try_from(self.made()).ok().filter(|t| *t != NONE)?;
        self.rest.push(Slot::free(at, NONE));
        Some(tag)
    }

    /// A tag from [`Slots::take`] that was not used goes back.
    pub fn untake(&mut self, tag: Tag) {
        let top = self.free;
        self.slot_mut(tag).next = top;
        self.free = tag;
    }

    /// The operation that took `tag` was sent.
    #[inline]
    pub fn fill(&mut self, tag: Tag, intended: Instant, sent: Instant, kind: usize, phase: usize) {
        *self.slot_mut(tag) = Slot {
            intended,
            sent,
            kind,
            phase,
            busy: true,
            next: NONE,
        };
        self.busy += 1;
    }

    /// The operation on `tag` is over: its slot as it was, now free;
    /// `None` if `tag` was not busy (a driver answered a tag it was not
    /// given).
    #[inline]
    pub fn release(&mut self, tag: Tag) -> Option<Slot> {
        let top = self.free;
        let slot = self.get_mut(tag).filter(|s| s.busy)?;
        slot.busy = false;
        slot.next = top;
        let done = *slot;
        self.free = tag;
        self.busy -= 1;
        Some(done)
    }

    /// Every busy slot: each is released, and seen once.
    pub fn release_all(&mut self, mut each: impl FnMut(&Slot)) {
        if self.busy == 0 {
            return;
        }
        let made = self.made();
        for tag in 0..made {
            let tag = tag as Tag;
            if self.slot(tag).busy {
                each(self.slot(tag));
                let released = self.release(tag);
                debug_assert!(released.is_some());
            }
        }
    }

    /// When the oldest operation in flight was sent.
    pub fn oldest_sent(&self) -> Option<Instant> {
        std::iter::once(&self.first)
            .chain(&self.rest)
            .filter(|s| s.busy)
            .map(|s| s.sent)
            .min()
    }

    fn get_mut(&mut self, tag: Tag) -> Option<&mut Slot> {
        match tag {
            0 => Some(&mut self.first),
            t => self.rest.get_mut(t as usize - 1),
        }
    }

    /// A slot that exists (tags from `take`, or below `made`).
    fn slot(&self, tag: Tag) -> &Slot {
        match tag {
            0 => &self.first,
            t => &self.rest[t as usize - 1],
        }
    }

    fn slot_mut(&mut self, tag: Tag) -> &mut Slot {
        match tag {
            0 => &mut self.first,
            t => &mut self.rest[t as usize - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Instant {
        Instant::now()
    }

    #[test]
    fn one_slot_is_taken_released_and_taken_again() {
        let t = at();
        let mut s = Slots::new(1, t);
        assert!(s.has_free());
        let tag = s.take(t).expect("a free slot");
        assert_eq!(tag, 0);
        s.fill(tag, t, t, 3, 1);
        assert!(!s.has_free());
        assert_eq!(s.take(t), None);
        assert_eq!(s.busy(), 1);
        let done = s.release(0).expect("busy");
        assert_eq!((done.kind, done.phase, done.busy), (3, 1, false));
        assert!(s.release(0).is_none(), "a tag is released once");
        assert_eq!(s.take(t), Some(0));
    }

    #[test]
    fn slots_are_made_up_to_the_depth_and_freed_tags_come_back_first() {
        let t = at();
        let mut s = Slots::new(3, t);
        let tags: Vec<Tag> = (0..3).map_while(|_| s.take(t)).collect();
        assert_eq!(tags, [0, 1, 2]);
        assert_eq!(s.take(t), None, "no more than the depth");
        for &tag in &tags {
            s.fill(tag, t, t, 0, 1);
        }
        s.release(1).expect("busy");
        assert!(s.release(7).is_none(), "a tag never given");
        assert_eq!(s.take(t), Some(1), "the freed slot, not a new one");
        s.untake(1);
        assert_eq!(s.take(t), Some(1));
    }

    #[test]
    fn release_all_sees_each_busy_slot_once_and_frees_it() {
        let t = at();
        let later = t + std::time::Duration::from_millis(5);
        let mut s = Slots::new(4, t);
        for (i, sent) in [later, t, later].into_iter().enumerate() {
            let tag = s.take(t).expect("room");
            s.fill(tag, t, sent, i, 1);
        }
        s.release(2).expect("busy");
        assert_eq!(s.oldest_sent(), Some(t));
        let mut kinds = Vec::new();
        s.release_all(|slot| kinds.push(slot.kind));
        assert_eq!(kinds, [0, 1]);
        assert_eq!((s.busy(), s.oldest_sent()), (0, None));
        let mut free: Vec<Tag> = (0..4).map_while(|_| s.take(t)).collect();
        free.sort_unstable();
        assert_eq!(
            free,
            [0, 1, 2, 3],
            "every slot is free again, and one more was made"
        );
    }
}
