//! How the CLI prints a listing: `--output table` (the default: aligned columns, times in UTC as
//! `2026-11-23 17:42:36Z`, sizes as `1.5 MiB`) for people, `--output json` (the host's JSON as it
//! answered, pretty-printed) for scripts. Every listing goes through [`print_list`] with its
//! columns, so all of them read alike.

use clap::{Args, ValueEnum};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns with readable times and sizes.
    Table,
    /// The JSON the host answered (stable, for scripts).
    Json,
}

/// The `--output` flag of every listing.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// How to print: `table` for people, `json` for scripts.
    #[arg(
        long,
        short = 'o',
        value_enum,
        default_value = "table",
        env = "AIPHOST_OUTPUT"
    )]
    output: Format,
    /// Same as `--output json` (kept for scripts written before `--output`).
    #[arg(long, hide = true)]
    json: bool,
}

impl OutputArgs {
    pub fn format(&self) -> Format {
        if self.json { Format::Json } else { self.output }
    }
}

/// How a column's values are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// As it is (a string without quotes, anything else as JSON).
    Text,
    /// A number, right-aligned.
    Number,
    /// Unix milliseconds or an RFC 3339 timestamp, shown in UTC to the second.
    Time,
    /// A count of bytes, shown with a binary unit, right-aligned.
    Bytes,
    /// An array, its items joined with commas.
    List,
}

/// One column: its header, where its value is in a row (a JSON pointer), how it is shown, and
/// what stands for a missing or null value.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub header: &'static str,
    pub pointer: &'static str,
    pub kind: Kind,
    pub missing: &'static str,
}

impl Column {
    pub const fn new(header: &'static str, pointer: &'static str, kind: Kind) -> Column {
        Column {
            header,
            pointer,
            kind,
            missing: "-",
        }
    }

    /// What a null or absent value means for this column (e.g. `never` for an expiry).
    pub const fn or(self, missing: &'static str) -> Column {
        Column { missing, ..self }
    }

    fn cell(&self, row: &Value) -> String {
        let value = row.pointer(self.pointer).unwrap_or(&Value::Null);
        let text = match (self.kind, value) {
            (_, Value::Null) => self.missing.to_string(),
            (Kind::List, Value::Array(items)) if items.is_empty() => self.missing.to_string(),
            (Kind::Time, Value::Number(n)) => n.as_i64().map_or(n.to_string(), utc_millis),
            (Kind::Time, Value::String(s)) => aiphost::model::Timestamp::parse(s)
                .map_or_else(|| s.clone(), |t| utc_millis(t.unix_millis())),
            (Kind::Bytes, Value::Number(n)) => n.as_u64().map_or(n.to_string(), human_bytes),
            (Kind::List, Value::Array(items)) => {
                items.iter().map(plain).collect::<Vec<_>>().join(",")
            }
            (_, value) => plain(value),
        };
        // A cell is one line: a newline in an error text would break the columns.
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    }

    fn right_aligned(&self) -> bool {
        matches!(self.kind, Kind::Number | Kind::Bytes)
    }
}

/// A string without its quotes; anything else as compact JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Unix milliseconds as `2026-11-23 17:42:36Z`.
pub fn utc_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Bytes with the largest binary unit that keeps the number at least 1: `512 B`, `1.5 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    // Precision beyond one decimal is noise in a listing; f64 is exact enough for that.
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

/// `rows` as a table: a header line, then one line per row, columns separated by two spaces
/// and padded to their widest cell (the last column is not padded). A column empty in every row
/// (an error column when nothing failed) is left out.
pub fn render_table(rows: &[Value], columns: &[Column]) -> String {
    let all: Vec<Vec<String>> = rows
        .iter()
        .map(|row| columns.iter().map(|c| c.cell(row)).collect())
        .collect();
    let shown: Vec<usize> = (0..columns.len())
        .filter(|&i| all.iter().any(|r| !r[i].is_empty()))
        .collect();
    let columns: Vec<Column> = shown.iter().map(|&i| columns[i]).collect();
    let cells: Vec<Vec<String>> = all
        .iter()
        .map(|r| shown.iter().map(|&i| r[i].clone()).collect())
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.header.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let headers: Vec<String> = columns.iter().map(|c| c.header.to_uppercase()).collect();
    for line in std::iter::once(&headers).chain(cells.iter()) {
        let mut text = String::new();
        for (i, (cell, column)) in line.iter().zip(&columns).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            let last = i + 1 == columns.len();
            if column.right_aligned() {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if !last {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// Print a listing: `json` as given (pretty), or `rows` as a table (`empty`, if not "", when
/// there are none).
/// `json` is what the host answered, which may hold more than the rows (a versions listing's
/// current version), so scripts see exactly what they saw before `--output`.
pub fn print_list(
    format: Format,
    json: &Value,
    rows: &[Value],
    columns: &[Column],
    empty: &str,
) -> anyhow::Result<()> {
    let text = match format {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(json)?),
        Format::Table if rows.is_empty() && empty.is_empty() => String::new(),
        Format::Table if rows.is_empty() => format!("{empty}\n"),
        Format::Table => render_table(rows, columns),
    };
    // Written, not `print!`ed: a closed pipe (`| head`) is an error to return, not a panic.
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_are_utc_to_the_second() {
        assert_eq!(utc_millis(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc_millis(1_795_455_756_999), "2026-11-23 17:42:36Z");
        assert_eq!(utc_millis(951_782_400_000), "2000-02-29 00:00:00Z");
        assert_eq!(utc_millis(-1), "1969-12-31 23:59:59Z");
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(3 << 30), "3 GiB");
    }

    #[test]
    fn a_table_aligns_its_columns() {
        let rows = vec![
            json!({"id": "acme", "createdMs": 1_795_455_756_000i64, "storedBytes": 2048,
                   "agents": ["a", "b"], "expiresMs": null}),
            json!({"id": "globex-long", "createdMs": 0, "storedBytes": 5,
                   "agents": [], "at": "2026-11-23T17:42:36.5+08:00",
                   "error": "line one\nline two"}),
        ];
        let columns = [
            Column::new("id", "/id", Kind::Text),
            Column::new("stored", "/storedBytes", Kind::Bytes),
            Column::new("created", "/createdMs", Kind::Time),
            Column::new("agents", "/agents", Kind::List),
            Column::new("expires", "/expiresMs", Kind::Time).or("never"),
            Column::new("at", "/at", Kind::Time),
            Column::new("error", "/error", Kind::Text),
        ];
        let table = render_table(&rows, &columns);
        let expected = "\
ID           STORED  CREATED               AGENTS  EXPIRES  AT                    ERROR
acme          2 KiB  2026-11-23 17:42:36Z  a,b     never    -                     -
globex-long     5 B  1970-01-01 00:00:00Z  -       never    2026-11-23 09:42:36Z  line one line two
";
        assert_eq!(table, expected);
    }

    #[test]
    fn a_column_empty_everywhere_is_left_out() {
        let rows = vec![json!({"id": "a"}), json!({"id": "b", "error": ""})];
        let columns = [
            Column::new("id", "/id", Kind::Text),
            Column::new("error", "/error", Kind::Text).or(""),
        ];
        assert_eq!(render_table(&rows, &columns), "ID\na\nb\n");
    }

    #[test]
    fn an_unreadable_time_is_shown_as_it_came() {
        let rows = vec![json!({"at": "yesterday"})];
        let table = render_table(&rows, &[Column::new("at", "/at", Kind::Time)]);
        assert_eq!(table, "AT\nyesterday\n");
    }
}
