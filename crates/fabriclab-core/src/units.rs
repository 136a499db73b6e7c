//! Units of the simulation: integer picosecond time and bit rates.
//!
//! Time is a `u64` count of picoseconds (enough for 213 days of simulated
//! time). Rates are integer bits per second. Serialisation times are computed
//! in 128-bit integer arithmetic and rounded up to the next picosecond, so
//! that the same inputs always give the same times on every machine. There is
//! no floating-point time anywhere in the engine.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in picoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    /// Time zero.
    pub const ZERO: Time = Time(0);
    /// The largest representable time, used as "never".
    pub const NEVER: Time = Time(u64::MAX);

    /// From picoseconds.
    pub const fn ps(ps: u64) -> Time {
        Time(ps)
    }
    /// From nanoseconds.
    pub const fn ns(ns: u64) -> Time {
        Time(ns * 1_000)
    }
    /// From microseconds.
    pub const fn us(us: u64) -> Time {
        Time(us * 1_000_000)
    }
    /// From milliseconds.
    pub const fn ms(ms: u64) -> Time {
        Time(ms * 1_000_000_000)
    }
    /// From a (non-negative, finite) number of nanoseconds, rounded to the
    /// nearest picosecond. Used only when reading configuration.
    pub fn from_ns_f64(ns: f64) -> Time {
        debug_assert!(ns.is_finite() && ns >= 0.0);
        Time((ns * 1_000.0).round() as u64)
    }
    /// Picoseconds.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Nanoseconds as a float (for reports only).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// Microseconds as a float (for reports only).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Seconds as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }
    /// `self - other`, or zero if `other` is later.
    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0 + rhs.0)
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        self.0 += rhs.0;
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, rhs: Time) -> Time {
        debug_assert!(self.0 >= rhs.0, "negative time span");
        Time(self.0 - rhs.0)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} us", self.as_us_f64())
    }
}

/// A link or sending rate in bits per second.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    /// From bits per second.
    pub const fn bps(bps: u64) -> Rate {
        Rate(bps)
    }
    /// From gigabits per second (10^9 bits).
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    /// From a float number of Gb/s (configuration input), rounded to 1 b/s.
    pub fn from_gbps_f64(g: f64) -> Rate {
        Rate((g * 1e9).round() as u64)
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Gb/s as a float (for reports only).
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Time to serialise `bytes` at this rate, rounded up to the picosecond.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Time {
        const BIT_PS: u64 = 8 * 1_000_000_000_000;
        if bytes <= u64::MAX / BIT_PS {
            // Every frame (up to 2.3 MB): one 64-bit division, the same
            // result as the 128-bit one below.
            return Time((bytes * BIT_PS).div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * 1_000_000_000_000u128;
        let den = self.0 as u128;
        Time(num.div_ceil(den) as u64)
    }
    /// Bytes that this rate moves in `t` (rounded down).
    pub fn bytes_in(self, t: Time) -> u64 {
        (t.0 as u128 * self.0 as u128 / (8 * 1_000_000_000_000u128)) as u64
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Gb/s", self.as_gbps_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_of_a_1106_byte_frame_at_100g_is_88_48_ns() {
        assert_eq!(Rate::gbps(100).tx_time(1106), Time::ps(88_480));
    }

    #[test]
    fn serialisation_rounds_up_to_the_picosecond() {
        // 1 byte at 3 b/s = 8/3 s = 2.666..e12 ps -> rounded up.
        assert_eq!(Rate::bps(3).tx_time(1), Time::ps(2_666_666_666_667));
    }

    #[test]
    fn large_messages_do_not_overflow() {
        let t = Rate::gbps(1).tx_time(8 << 30); // 8 GiB at 1 Gb/s
        assert_eq!(t, Time::ps(68_719_476_736_000));
    }

    #[test]
    fn both_division_paths_agree_at_their_boundary() {
        // 2,305,843 bytes is the last size of the 64-bit path.
        let r = Rate::bps(7_000_000_003);
        for bytes in [2_305_842, 2_305_843, 2_305_844, 2_305_845] {
            let exact = (bytes as u128 * 8_000_000_000_000).div_ceil(7_000_000_003);
            assert_eq!(r.tx_time(bytes), Time::ps(exact as u64), "{bytes} B");
        }
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::gbps(25);
        assert_eq!(r.bytes_in(r.tx_time(4096)), 4096);
    }
}
