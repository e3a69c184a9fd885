//! Chunked: streams a large text product in several chunks.
//!
//! The product `report` is `size` bytes of text (default 64 KiB), streamed in chunks of
//! `chunkSize` bytes (default 8 KiB) with `append`, the last one marked `last`. Both come from
//! `commandParams` (`{"size": N, "chunkSize": N}`) or from the input text (`size=N chunkSize=N`);
//! `delayMs` (same places) pauses between chunks, to watch them arrive live. It checks
//! `maxProductsBytes` first and fails without emitting anything when the report would not fit.
//! As spec 6.2.4 says, the first chunk has `append: false` (it starts the product, replacing an
//! earlier report on a continue) and the rest `append: true`.

use aiphost_sdk::serde_json::{Map, Value};
use aiphost_sdk::{DataItem, Outcome, Partner, Product, Task};

/// The chunked partner.
pub struct Chunked;

const DEFAULT_SIZE: u64 = 64 * 1024;
const DEFAULT_CHUNK_SIZE: u64 = 8 * 1024;

/// The report's text repeats this line.
const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789\n";

impl Partner for Chunked {
    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
        let size = match setting(task.params(), &input, "size") {
            Ok(size) => size.unwrap_or(DEFAULT_SIZE),
            Err(reason) => return Outcome::Fail(reason),
        };
        let chunk_size = match setting(task.params(), &input, "chunkSize") {
            Ok(Some(0)) => return Outcome::fail("chunkSize must be at least 1"),
            Ok(chunk) => chunk.unwrap_or(DEFAULT_CHUNK_SIZE),
            Err(reason) => return Outcome::Fail(reason),
        };
        let delay = match setting(task.params(), &input, "delayMs") {
            Ok(ms) => std::time::Duration::from_millis(ms.unwrap_or(0)),
            Err(reason) => return Outcome::Fail(reason),
        };
        if let Some(allowed) = task.products_bytes_left()
            && size > allowed
        {
            return Outcome::Fail(format!(
                "report needs {size} bytes but maxProductsBytes allows {allowed}"
            ));
        }

        let mut offset = 0;
        loop {
            let len = chunk_size.min(size - offset);
            let last = offset + len >= size;
            let chunk = Product::new("report")
                .named("report")
                .described(format!("{size} bytes of text in chunks of {chunk_size}"))
                .with_item(DataItem::text(text(offset, len)));
            let append = offset > 0;
            match task.emit_chunk(chunk, append, last) {
                Ok(()) => {}
                // The task is over (canceled, or failed by the host): the SDK stops quietly.
                Err(e) if e.ends_task() => return Outcome::Done(Vec::new()),
                Err(e) => {
                    return Outcome::Fail(format!("the chunk at byte {offset} was refused: {e}"));
                }
            }
            offset += len;
            if last {
                break;
            }
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
        }
        // Everything was streamed already.
        Outcome::Done(Vec::new())
    }
}

aiphost_sdk::export!(Chunked);

/// A byte count from `commandParams[key]`, else from a `key=N` word of the input text (any case).
fn setting(
    params: &Map<String, Value>,
    input: &[DataItem],
    key: &str,
) -> Result<Option<u64>, String> {
    if let Some(value) = params.get(key) {
        return value.as_u64().map(Some).ok_or_else(|| {
            format!("commandParams.{key} must be a non-negative integer, got {value}")
        });
    }
    for text in input.iter().filter_map(DataItem::as_text) {
        for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
            let Some((name, value)) = word.split_once('=') else {
                continue;
            };
            if name.eq_ignore_ascii_case(key) {
                return value
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| format!("{key} must be a non-negative integer, got {value:?}"));
            }
        }
    }
    Ok(None)
}

/// `len` bytes of the report starting at byte `offset` (ASCII, so bytes are characters).
fn text(offset: u64, len: u64) -> String {
    (offset..offset + len)
        .map(|i| char::from(PATTERN[(i % PATTERN.len() as u64) as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_sdk::serde_json::json;

    #[test]
    fn settings_from_params_or_text() {
        let params = json!({"size": 100, "chunkSize": "x"});
        let params = params.as_object().unwrap();
        let input = [DataItem::text("size=5 chunkSize=2")];
        assert_eq!(setting(params, &input, "size"), Ok(Some(100)));
        assert!(
            setting(params, &input, "chunkSize")
                .unwrap_err()
                .contains("chunkSize")
        );
        let empty = Map::new();
        assert_eq!(setting(&empty, &input, "size"), Ok(Some(5)));
        assert_eq!(setting(&empty, &input, "chunkSize"), Ok(Some(2)));
        assert_eq!(
            setting(&empty, &[DataItem::text("SIZE=7")], "size"),
            Ok(Some(7))
        );
        assert_eq!(setting(&empty, &[], "size"), Ok(None));
        assert!(setting(&empty, &[DataItem::text("size=big")], "size").is_err());
    }

    #[test]
    fn text_is_contiguous() {
        let whole = text(0, 100);
        assert_eq!(whole.len(), 100);
        assert_eq!(format!("{}{}", text(0, 40), text(40, 60)), whole);
    }
}
