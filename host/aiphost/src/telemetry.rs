//! Telemetry: the host's log lines (tracing's `fmt` layer on stderr) and, when an OTLP endpoint is
//! set, its spans exported as OpenTelemetry traces over OTLP/HTTP (protobuf).
//!
//! The switch is `--otlp-endpoint URL` (`aiphost serve`), else the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, which the exporter reads
//! itself. Without any, no OpenTelemetry layer is installed and no `traceparent` is read: off
//! costs nothing. The exporter's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `_TIMEOUT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_RESOURCE_ATTRIBUTES`) are honoured by
//! the SDK; `OTEL_SERVICE_NAME` defaults to `aiphost`.
//!
//! Spans leave in batches from the SDK's own thread (a blocking client on the reqwest the host
//! already has), so a request never waits for the collector; [`Guard`] flushes what is left
//! when the process ends.
//!
//! Which spans: those of the host's crates (`aiphost*` targets) at `debug` and above, whatever
//! `--log` says (it filters log lines only), and its events at `info` and above as span events.
//! The spans: `request` (kit/span.rs) → `engine.command` → `invocation` →
//! `store.wait_durable`, and each committer round as its own root `store.commit`, linked from
//! the waits it ended.

use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::Metadata;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The OTLP/HTTP path of traces, added to a base URL.
const TRACES_PATH: &str = "/v1/traces";

/// Whether spans are exported (read by the request span before it reads `traceparent`).
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Whether this process exports its spans: an OTLP endpoint was set when it started.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Write the current span's trace context (`traceparent`, `tracestate`) into `headers`: an
/// outbound request continues the trace of the work that sends it.
pub fn inject(headers: &mut http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut opentelemetry_http::HeaderInjector(headers));
    });
}

/// What [`init`] sets up.
pub struct Options {
    /// Which log lines are written (`--log`, `RUST_LOG`, or the command's default).
    pub filter: EnvFilter,
    /// Log lines as JSON (`--log-json`) instead of text.
    pub json: bool,
    /// Colour the text (a person at a terminal).
    pub colour: bool,
    /// `--otlp-endpoint`, if given.
    pub otlp_endpoint: Option<String>,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `--otlp-endpoint` is not an `http://` or `https://` URL.
    #[error("--otlp-endpoint {url:?}: {reason}")]
    Endpoint {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter could not be built (from the standard variables, say).
    #[error("the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber was installed already.
    #[error("a tracing subscriber is set already: {0}")]
    Installed(#[from] tracing_subscriber::util::TryInitError),
}

/// Flushes the spans not yet exported when dropped (at the end of `main`, after the host has
/// stopped): a graceful stop loses none.
#[must_use = "dropping the guard stops the export"]
pub struct Guard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            // Written, not `eprintln!`ed: a closed stderr is no reason to panic on the way out.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "warning: flushing traces: {e}");
        }
    }
}

/// Install the global subscriber: the log lines, and the span export when an endpoint is set.
pub fn init(options: Options) -> Result<Guard, TelemetryError> {
    let Options {
        filter,
        json,
        colour,
        otlp_endpoint,
    } = options;
    let Some(provider) = provider(otlp_endpoint.as_deref())? else {
        // Off: the log lines alone, filtered globally, as before traces existed.
        tracing_subscriber::registry()
            .with(filter)
            .with(lines(json, colour))
            .try_init()?;
        return Ok(Guard { provider: None });
    };
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("aiphost"))
        .with_threads(false)
        .with_filter(tracing_subscriber::filter::filter_fn(exported));
    tracing_subscriber::registry()
        .with(lines(json, colour).with_filter(filter))
        .with(otel)
        .try_init()?;
    EXPORTING.store(true, Ordering::Relaxed);
    Ok(Guard {
        provider: Some(provider),
    })
}

/// The log lines' layer: text or JSON, on stderr.
fn lines<S>(json: bool, colour: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    match json {
        true => fmt.json().boxed(),
        false => fmt.boxed(),
    }
}

/// Whether a span or event goes to the traces: the host's own spans (down to `debug`, where the
/// store's are, so that they cost nothing when only logging) and its `info` events; the
/// partners' log lines (target `partner`) as events of their invocation's span.
fn exported(meta: &Metadata<'_>) -> bool {
    let ours = meta.target().starts_with("aiphost") || meta.target() == "partner";
    let level = if meta.is_span() {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    ours && *meta.level() <= level
}

/// The tracer provider exporting to `flag`'s endpoint, or to the one the standard variables
/// name; `None` when there is none (or `OTEL_SDK_DISABLED=true`).
fn provider(flag: Option<&str>) -> Result<Option<SdkTracerProvider>, TelemetryError> {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let builder = opentelemetry_otlp::SpanExporter::builder().with_http();
    let exporter = match flag {
        Some(url) => builder.with_endpoint(traces_url(url)?).build()?,
        None if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT") => {
            builder.build()?
        }
        None => return Ok(None),
    };
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build(),
    ))
}

/// The resource spans are exported under: `OTEL_SERVICE_NAME` (or `service.name` in
/// `OTEL_RESOURCE_ATTRIBUTES`), else `aiphost`; and this build's version.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    match named {
        true => builder.build(),
        false => builder.with_service_name("aiphost").build(),
    }
}

/// `--otlp-endpoint` as the exporter takes it: a collector's base URL (`http://collector:4318`)
/// gets the traces path, as `OTEL_EXPORTER_OTLP_ENDPOINT` does; a URL with a path is used as
/// given.
pub fn traces_url(url: &str) -> Result<String, TelemetryError> {
    let refused = |reason: &str| TelemetryError::Endpoint {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let uri: http::Uri = url.trim().parse().map_err(|_| refused("not a URL"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(refused("the URL must start with http:// or https://")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(refused("the URL names no host"));
    }
    let text = url.trim();
    Ok(match uri.path() {
        "" | "/" => format!("{}{TRACES_PATH}", text.trim_end_matches('/')),
        _ => text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A base URL gets `/v1/traces`; one with a path keeps it; anything else is refused.
    #[test]
    fn the_flag_names_the_collector() {
        assert_eq!(
            traces_url("http://collector:4318").unwrap(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector:4318/").unwrap(),
            "https://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://127.0.0.1:9/custom/traces").unwrap(),
            "http://127.0.0.1:9/custom/traces"
        );
        for bad in [
            "collector:4318",
            "grpc://c:4317",
            "http://",
            "not a url",
            "",
        ] {
            assert!(traces_url(bad).is_err(), "{bad:?}");
        }
    }

    /// The host's spans down to debug and its info events go out; others' do not.
    #[test]
    fn what_is_exported() {
        use tracing::Level;
        use tracing::callsite::Identifier;
        use tracing::field::FieldSet;
        use tracing::metadata::Kind;
        struct Site;
        impl tracing::Callsite for Site {
            fn set_interest(&self, _: tracing::subscriber::Interest) {}
            fn metadata(&self) -> &Metadata<'_> {
                unreachable!("not registered")
            }
        }
        static SITE: Site = Site;
        let meta = |target: &'static str, level: Level, kind: Kind| {
            Metadata::new(
                "x",
                target,
                level,
                None,
                None,
                None,
                FieldSet::new(&[], Identifier(&SITE)),
                kind,
            )
        };
        assert!(exported(&meta(
            "aiphost_store::committer",
            Level::DEBUG,
            Kind::SPAN
        )));
        assert!(exported(&meta(
            "aiphost::transport",
            Level::INFO,
            Kind::EVENT
        )));
        assert!(exported(&meta("partner", Level::INFO, Kind::EVENT)));
        assert!(!exported(&meta(
            "aiphost_engine",
            Level::DEBUG,
            Kind::EVENT
        )));
        assert!(!exported(&meta("hyper::proto", Level::INFO, Kind::SPAN)));
        assert!(!exported(&meta("aiphost_store", Level::TRACE, Kind::SPAN)));
    }
}
