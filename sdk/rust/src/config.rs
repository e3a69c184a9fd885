//! Named config values: the partner's manifest asks for names (`[capabilities] config`), and its
//! tenant sets the values with `aiphost` (the admin API).
//!
//! ```no_run
//! let model = aiphost_sdk::config::get("MODEL").unwrap_or_else(|_| "default".into());
//! ```

#[cfg(target_arch = "wasm32")]
use crate::bindings::aiphost::partner::config as wit_config;

/// Why a config value is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The manifest does not ask for this name.
    NotGranted,
    /// Asked for, but the tenant has not set it.
    NotSet,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfigError::NotGranted => "the manifest does not ask for this config value",
            ConfigError::NotSet => "the config value is not set",
        })
    }
}

impl std::error::Error for ConfigError {}

/// The value of config `name`.
///
/// Outside a component (in native unit tests) the value comes from the running
/// [`MockHost`](crate::testing::MockHost) ([`MockHost::with_config`](crate::testing::MockHost::with_config));
/// without one, nothing is granted.
pub fn get(name: &str) -> Result<String, ConfigError> {
    #[cfg(target_arch = "wasm32")]
    {
        wit_config::get(name).map_err(|e| match e {
            wit_config::ConfigError::NotGranted => ConfigError::NotGranted,
            wit_config::ConfigError::NotSet => ConfigError::NotSet,
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::config(name)
    }
}
