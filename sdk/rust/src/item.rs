//! DataItems and products, the content a partner receives and produces.

use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::types as wit;

/// One AIP DataItem: text, a file or a structured JSON object, with optional metadata.
///
/// ```
/// use aiphost_sdk::DataItem;
/// use aiphost_sdk::serde_json::json;
///
/// let question = DataItem::text("Where do you want to go?");
/// assert_eq!(question.as_text(), Some("Where do you want to go?"));
///
/// let missing = DataItem::data(json!({"missing": ["destination"]}));
/// assert_eq!(missing.as_data().unwrap()["missing"][0], "destination");
///
/// // Values that are not objects are wrapped as {"value": ...}.
/// assert_eq!(DataItem::data(json!(42)).as_data().unwrap()["value"], 42);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DataItem {
    /// What the item carries.
    pub kind: DataKind,
    /// Free-form metadata (a JSON object), if any.
    pub metadata: Option<Map<String, Value>>,
}

/// The content of a [`DataItem`].
#[derive(Clone, Debug, PartialEq)]
pub enum DataKind {
    /// Plain text (`text/plain`).
    Text(String),
    /// A file, by URI or inline bytes.
    File(File),
    /// Structured data: a JSON object (`application/json`).
    Data(Map<String, Value>),
}

/// A file carried by a [`DataItem`].
///
/// ```
/// use aiphost_sdk::{DataItem, File};
///
/// let chart = DataItem::file(
///     File::bytes(vec![0x89, b'P', b'N', b'G'])
///         .named("chart.png")
///         .with_mime_type("image/png"),
/// );
/// assert_eq!(chart.as_file().unwrap().name.as_deref(), Some("chart.png"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// The file name, if known.
    pub name: Option<String>,
    /// The MIME type, if known (without one the host treats the file as `application/octet-stream`).
    pub mime_type: Option<String>,
    /// Where the content is.
    pub content: FileContent,
}

/// Where a [`File`]'s content lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileContent {
    /// The content is at this URI.
    Uri(String),
    /// The content itself.
    Bytes(Vec<u8>),
}

impl File {
    /// A file whose content is at `uri`, with no name or MIME type yet.
    pub fn uri(uri: impl Into<String>) -> Self {
        File {
            name: None,
            mime_type: None,
            content: FileContent::Uri(uri.into()),
        }
    }

    /// A file carrying `bytes` inline, with no name or MIME type yet.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Self {
        File {
            name: None,
            mime_type: None,
            content: FileContent::Bytes(bytes.into()),
        }
    }

    /// Sets the file name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

impl DataItem {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        DataItem {
            kind: DataKind::Text(text.into()),
            metadata: None,
        }
    }

    /// A structured data item. A JSON object is used as it is; any other value `v` is wrapped as
    /// `{"value": v}`, because AIP data items are always objects.
    pub fn data(value: Value) -> Self {
        let map = match value {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("value".to_owned(), other);
                map
            }
        };
        DataItem {
            kind: DataKind::Data(map),
            metadata: None,
        }
    }

    /// A file item.
    pub fn file(file: File) -> Self {
        DataItem {
            kind: DataKind::File(file),
            metadata: None,
        }
    }

    /// A file item whose content is at `uri` (no name, no MIME type; see [`File`] for those).
    pub fn file_uri(uri: impl Into<String>) -> Self {
        Self::file(File::uri(uri))
    }

    /// A file item carrying `bytes` inline (no name, no MIME type; see [`File`] for those).
    pub fn file_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Self::file(File::bytes(bytes))
    }

    /// Sets the item's metadata.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The text, if this is a text item.
    pub fn as_text(&self) -> Option<&str> {
        match &self.kind {
            DataKind::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The JSON object, if this is a data item.
    pub fn as_data(&self) -> Option<&Map<String, Value>> {
        match &self.kind {
            DataKind::Data(map) => Some(map),
            _ => None,
        }
    }

    /// The file, if this is a file item.
    pub fn as_file(&self) -> Option<&File> {
        match &self.kind {
            DataKind::File(file) => Some(file),
            _ => None,
        }
    }

    /// The bytes this item counts for against `maxProductsBytes`, the way the host counts them:
    /// text as UTF-8, file bytes as they are (a URI by its length), data as compact JSON.
    pub fn content_bytes(&self) -> u64 {
        let n = match &self.kind {
            DataKind::Text(text) => text.len(),
            DataKind::File(file) => match &file.content {
                FileContent::Uri(uri) => uri.len(),
                FileContent::Bytes(bytes) => bytes.len(),
            },
            DataKind::Data(map) => serde_json::to_vec(map).map_or(0, |v| v.len()),
        };
        n as u64
    }

    pub(crate) fn into_wit(self) -> wit::DataItem {
        let kind = match self.kind {
            DataKind::Text(text) => wit::DataKind::Text(text),
            DataKind::File(file) => wit::DataKind::File(wit::FileItem {
                name: file.name,
                mime_type: file.mime_type,
                content: match file.content {
                    FileContent::Uri(uri) => wit::FileContent::Uri(uri),
                    FileContent::Bytes(bytes) => wit::FileContent::Bytes(bytes),
                },
            }),
            DataKind::Data(map) => wit::DataKind::Data(Value::Object(map).to_string()),
        };
        wit::DataItem {
            kind,
            metadata: self.metadata.map(|m| Value::Object(m).to_string()),
        }
    }

    pub(crate) fn from_wit(item: wit::DataItem) -> Result<Self, String> {
        let kind = match item.kind {
            wit::DataKind::Text(text) => DataKind::Text(text),
            wit::DataKind::File(file) => DataKind::File(File {
                name: file.name,
                mime_type: file.mime_type,
                content: match file.content {
                    wit::FileContent::Uri(uri) => FileContent::Uri(uri),
                    wit::FileContent::Bytes(bytes) => FileContent::Bytes(bytes),
                },
            }),
            wit::DataKind::Data(json) => DataKind::Data(parse_object(&json, "a data item")?),
        };
        let metadata = match item.metadata {
            Some(json) => Some(parse_object(&json, "DataItem metadata")?),
            None => None,
        };
        Ok(DataItem { kind, metadata })
    }
}

/// Parses JSON text the host sent where the contract promises an object.
pub(crate) fn parse_object(json: &str, what: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!(
            "aiphost-sdk: the host sent {what} that is not a JSON object"
        )),
        Err(e) => Err(format!(
            "aiphost-sdk: the host sent {what} that is not valid JSON: {e}"
        )),
    }
}

/// A product (an AIP artifact): the result of a task, made of DataItems.
///
/// ```
/// use aiphost_sdk::{DataItem, Product};
///
/// let report = Product::new("report")
///     .named("Weekly report")
///     .described("Sales by region")
///     .with_item(DataItem::text("North: 12\nSouth: 7"));
/// assert_eq!(report.data_items.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Product {
    /// The product id; a chunk with the same id appends to or replaces this product.
    pub id: String,
    /// A human-readable name.
    pub name: Option<String>,
    /// A description.
    pub description: Option<String>,
    /// The content.
    pub data_items: Vec<DataItem>,
}

impl Product {
    /// An empty product with this id.
    pub fn new(id: impl Into<String>) -> Self {
        Product {
            id: id.into(),
            name: None,
            description: None,
            data_items: Vec::new(),
        }
    }

    /// Sets the name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the description.
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds one item.
    pub fn with_item(mut self, item: DataItem) -> Self {
        self.data_items.push(item);
        self
    }

    /// Adds several items.
    pub fn with_items(mut self, items: impl IntoIterator<Item = DataItem>) -> Self {
        self.data_items.extend(items);
        self
    }

    /// The bytes this product counts for against `maxProductsBytes` (see
    /// [`DataItem::content_bytes`]).
    pub fn content_bytes(&self) -> u64 {
        self.data_items.iter().map(DataItem::content_bytes).sum()
    }

    pub(crate) fn into_wit(self) -> wit::Product {
        wit::Product {
            id: self.id,
            name: self.name,
            description: self.description,
            data_items: self
                .data_items
                .into_iter()
                .map(DataItem::into_wit)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_wraps_non_objects() {
        let item = DataItem::data(json!([1, 2]));
        assert_eq!(item.as_data().unwrap()["value"], json!([1, 2]));
        let item = DataItem::data(json!({"a": 1}));
        assert_eq!(item.as_data().unwrap()["a"], 1);
        assert!(item.as_text().is_none());
    }

    #[test]
    fn round_trip_through_wit() {
        let mut meta = Map::new();
        meta.insert("lang".into(), json!("en"));
        let items = vec![
            DataItem::text("hi").with_metadata(meta),
            DataItem::data(json!({"n": [1, 2.5]})),
            DataItem::file(File::uri("https://x/y.pdf").with_mime_type("application/pdf")),
            DataItem::file(File::bytes(vec![1, 2, 3]).named("b.bin")),
        ];
        for item in items {
            let back = DataItem::from_wit(item.clone().into_wit()).unwrap();
            assert_eq!(back, item);
        }
    }

    #[test]
    fn from_wit_refuses_non_objects() {
        let bad = wit::DataItem {
            kind: wit::DataKind::Data("[1]".into()),
            metadata: None,
        };
        assert!(
            DataItem::from_wit(bad)
                .unwrap_err()
                .contains("not a JSON object")
        );
        let bad = wit::DataItem {
            kind: wit::DataKind::Text("x".into()),
            metadata: Some("{oops".into()),
        };
        assert!(
            DataItem::from_wit(bad)
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn content_bytes_match_the_host() {
        assert_eq!(DataItem::text("héllo").content_bytes(), 6);
        assert_eq!(DataItem::data(json!({"a": 1})).content_bytes(), 7);
        assert_eq!(DataItem::file_bytes(vec![0; 10]).content_bytes(), 10);
        assert_eq!(DataItem::file_uri("abc").content_bytes(), 3);
        let p = Product::new("p")
            .with_item(DataItem::text("ab"))
            .with_items([DataItem::text("cd")]);
        assert_eq!(p.content_bytes(), 4);
    }
}
