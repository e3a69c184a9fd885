//! Several events of one task under one key.
//!
//! The events one write appends (a `start` appends accepted, working and awaiting-completion at
//! once) share one sled entry, keyed by the first one's seq. sled's cost goes with the number of
//! entries, not their bytes: its apply time, and its in-memory page table, which holds a page per
//! 16 leaf entries for as long as they are stored. A lone event is stored as it is, which is also
//! how every event was stored before batches, so older stores read unchanged.
//!
//! ```text
//! batch  = 0xFF (seq: u64 BE, len: u32 BE, event: len bytes)+
//! single = event   (a JSON document: never starts with 0xFF, which is not UTF-8)
//! ```

/// The first byte of a batch.
const BATCH: u8 = 0xFF;

/// A stored batch that does not parse.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed event batch: {0}")]
pub struct Malformed(&'static str);

/// The value that stores `events` (`(seq, event)`, in seq order) under the first one's key.
pub fn encode(events: &[(u64, &[u8])]) -> Vec<u8> {
    if let [(_, single)] = events {
        return single.to_vec();
    }
    let bytes: usize = events.iter().map(|(_, e)| 12 + e.len()).sum();
    let mut out = Vec::with_capacity(1 + bytes);
    out.push(BATCH);
    for (seq, event) in events {
        out.extend_from_slice(&seq.to_be_bytes());
        // An event is bounded by the request body limit, far below 4 GiB.
        out.extend_from_slice(&u32::try_from(event.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(event);
    }
    out
}

/// The events in `value`, stored under the key of seq `first`.
pub fn decode(first: u64, value: &[u8]) -> Result<Vec<(u64, &[u8])>, Malformed> {
    let Some((&BATCH, mut rest)) = value.split_first() else {
        return Ok(vec![(first, value)]);
    };
    let mut events = Vec::new();
    while !rest.is_empty() {
        let (seq, tail) = rest
            .split_first_chunk::<8>()
            .ok_or(Malformed("truncated seq"))?;
        let (len, tail) = tail
            .split_first_chunk::<4>()
            .ok_or(Malformed("truncated length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if tail.len() < len {
            return Err(Malformed("truncated event"));
        }
        let (event, tail) = tail.split_at(len);
        events.push((u64::from_be_bytes(*seq), event));
        rest = tail;
    }
    if events.is_empty() {
        return Err(Malformed("empty batch"));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_a_lone_event_is_stored_as_it_is() {
        let events: Vec<(u64, &[u8])> = vec![(7, b"{\"a\":1}"), (8, b""), (9, b"{}")];
        assert_eq!(decode(7, &encode(&events)), Ok(events));
        let single: Vec<(u64, &[u8])> = vec![(3, b"{\"state\":\"working\"}")];
        assert_eq!(encode(&single), b"{\"state\":\"working\"}");
        assert_eq!(decode(3, &encode(&single)), Ok(single));
    }

    #[test]
    fn every_truncation_of_a_batch_is_an_error_not_a_short_read() {
        let events: Vec<(u64, &[u8])> = vec![(1, b"{\"x\":true}"), (2, b"{\"y\":false}")];
        let whole = encode(&events);
        let frame = 12 + events[0].1.len();
        for cut in 1..whole.len() {
            // A cut on a frame boundary leaves a well-formed, shorter batch; anything else fails.
            let decoded = decode(1, &whole[..cut]);
            if cut == 1 + frame {
                assert_eq!(decoded, Ok(events[..1].to_vec()));
            } else {
                assert!(decoded.is_err(), "cut at {cut}: {decoded:?}");
            }
        }
    }
}
