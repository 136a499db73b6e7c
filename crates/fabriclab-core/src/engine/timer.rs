//! Lazily invalidated timers.
//!
//! A component that owns a timer keeps a [`Timer`]; arming it returns a
//! generation number to put in the scheduled event, and cancelling or
//! re-arming bumps the generation so that the old event is recognised as
//! stale when it pops. No heap surgery is needed.

use crate::units::Time;

/// The state of one logical timer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer {
    generation: u32,
    armed_at: Option<Time>,
}

impl Timer {
    /// Arm (or re-arm) for `at`; returns the generation to carry in the event.
    pub fn arm(&mut self, at: Time) -> u32 {
        self.generation = self.generation.wrapping_add(1);
        self.armed_at = Some(at);
        self.generation
    }

    /// Cancel: any pending event becomes stale.
    pub fn cancel(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        self.armed_at = None;
    }

    /// When the live event is due, if armed.
    pub fn due(&self) -> Option<Time> {
        self.armed_at
    }

    /// Called when an event with `generation` pops: true if it is the live
    /// one (which also disarms the timer), false if it is stale.
    pub fn fire(&mut self, generation: u32) -> bool {
        if self.armed_at.is_some() && generation == self.generation {
            self.armed_at = None;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rearming_makes_the_old_event_stale() {
        let mut t = Timer::default();
        let g1 = t.arm(Time::us(1));
        let g2 = t.arm(Time::us(2));
        assert!(!t.fire(g1));
        assert!(t.fire(g2));
        assert!(!t.fire(g2), "a timer fires once");
    }

    #[test]
    fn cancelled_timer_never_fires() {
        let mut t = Timer::default();
        let g = t.arm(Time::us(1));
        t.cancel();
        assert!(!t.fire(g));
        assert_eq!(t.due(), None);
    }
}
