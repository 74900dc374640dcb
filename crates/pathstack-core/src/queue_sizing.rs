//! How long a path's input queue should be (thesis §5.2.1): when
//! processing one message takes longer than the round trip to the source,
//! two slots keep the processor busy (one being processed, one advertised
//! free); otherwise the queue must hold twice the round trip × bandwidth
//! product, so that a group of messages whose processing spans a round
//! trip can be in transit while the previous group is processed.

use crate::time::Duration;

/// The input queue length, in messages, for a path whose measured round
/// trip is `rtt`, whose processing takes `cpu_per_msg` per message (its
/// [`PathStats::cpu_ns`](crate::path::PathStats::cpu_ns) over its
/// messages), fed at `msgs_per_sec` messages per second (the bandwidth,
/// in messages). At least 2.
///
/// ```
/// use pathstack_core::queue_sizing::queue_len_for;
/// use pathstack_core::time::Duration;
/// // Processing (1 ms) slower than the round trip (100 us): two slots.
/// assert_eq!(queue_len_for(Duration::from_micros(100), Duration::from_millis(1), 50_000.0), 2);
/// // 10 ms round trip at 10,000 messages/s: 2 x 100 in transit.
/// assert_eq!(queue_len_for(Duration::from_millis(10), Duration::from_micros(20), 10_000.0), 200);
/// ```
pub fn queue_len_for(rtt: Duration, cpu_per_msg: Duration, msgs_per_sec: f64) -> usize {
    if cpu_per_msg.as_nanos() >= rtt.as_nanos() {
        return 2;
    }
    let in_flight = rtt.as_nanos() as f64 / 1e9 * msgs_per_sec.max(0.0);
    // Saturating: an absurd bandwidth gives the largest queue, not a wrap.
    let n = (2.0 * in_flight).ceil();
    if n >= usize::MAX as f64 {
        usize::MAX
    } else {
        (n as usize).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_slots_when_processing_is_the_bottleneck() {
        let rtt = Duration::from_micros(500);
        assert_eq!(queue_len_for(rtt, Duration::from_micros(500), 1e9), 2);
        assert_eq!(queue_len_for(rtt, Duration::from_millis(3), 1e6), 2);
    }

    #[test]
    fn twice_the_bandwidth_delay_product_otherwise() {
        let cpu = Duration::from_micros(10);
        // 1 ms x 100,000 msg/s = 100 in flight: 200 slots.
        assert_eq!(queue_len_for(Duration::from_millis(1), cpu, 100_000.0), 200);
        // A fraction rounds up.
        assert_eq!(queue_len_for(Duration::from_millis(1), cpu, 1_500.0), 3);
        // A slow link still gets two slots.
        assert_eq!(queue_len_for(Duration::from_millis(1), cpu, 10.0), 2);
        assert_eq!(
            queue_len_for(Duration::from_millis(1), cpu, f64::INFINITY),
            usize::MAX
        );
    }
}
