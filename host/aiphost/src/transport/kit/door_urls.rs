//! The URLs of the doors besides AIP's and A2A's (the chat doors, the MCP door), as a partner's
//! listings name them: the host's `/agents` index, the partner's ACS document (an `endPoints`
//! entry per door) and its A2A card (one extension whose `params` name them). The listings
//! belong to other doors (ACS to AIP's, the card to A2A's), and doors never import each other,
//! so the URLs are written here, by path, once: a listing reads [`DOOR_URLS`], and a new door
//! adds its rows below and nothing else. That the paths are the ones the doors serve is tested
//! end to end (every listed URL answers).
//!
//! The card's extension keeps its first name (`chat-doors/v1`): it is on the wire, and its
//! `params` are a map a client reads by key, so a door added to it is no change to its shape.

/// One URL of a door, under a partner's URL (`{base}/agents/{id}`).
#[derive(Clone, Copy, Debug)]
pub struct DoorUrl {
    /// The door's key in the `/agents` index, where its URLs are grouped (`agentApi`).
    pub door: &'static str,
    /// The URL's name in that group (`process`).
    pub name: &'static str,
    /// Its path under the partner's URL (`process`).
    pub path: &'static str,
    /// The `transport` of the ACS `endPoints` entry naming it, for a door's entry URL (ACS's
    /// `transport` is free text; the JSON-RPC endpoint stays first).
    pub acs_transport: Option<&'static str>,
    /// Its key in the `params` of the card's [`EXTENSION`], for a URL a client starts at.
    pub card_param: Option<&'static str>,
}

/// Every door's URLs, in the order the listings show them: one row each (a table, so rustfmt
/// leaves it one).
#[rustfmt::skip]
pub const DOOR_URLS: &[DoorUrl] = &[
    //           door        name        path                   ACS transport         card param
    DoorUrl::new("agentApi", "process",  "process",             Some("AGENT_API"),    Some("agentApi")),
    DoorUrl::new("agentApi", "stop",     "process/stop",        None,                 None),
    DoorUrl::new("aiflowy",  "chat",     "aiflowy/chat",        Some("AIFLOWY_CHAT"), Some("aiflowyChat")),
    DoorUrl::new("aiflowy",  "form",     "aiflowy/form",        None,                 Some("aiflowyForm")),
    DoorUrl::new("aiflowy",  "events",   "aiflowy/chat/events", None,                 None),
    DoorUrl::new("aiflowy",  "stop",     "aiflowy/chat/stop",   None,                 None),
    DoorUrl::new("mcp",      "endpoint", "mcp",                 Some("MCP"),          Some("mcp")),
];

/// The host's own MCP server (every partner a caller may use), under the host's base URL: the
/// `/agents` index names it under `"mcp"`.
pub const HOST_MCP_PATH: &str = "mcp";

/// The A2A card's extension that names these doors (not a `supportedInterfaces` entry: an
/// A2A client picks a binding from those, and these are not A2A bindings).
pub const EXTENSION: &str = "https://aiphost.dev/ext/chat-doors/v1";

impl DoorUrl {
    /// A row of [`DOOR_URLS`]: the fields in their order.
    const fn new(
        door: &'static str,
        name: &'static str,
        path: &'static str,
        acs_transport: Option<&'static str>,
        card_param: Option<&'static str>,
    ) -> Self {
        DoorUrl {
            door,
            name,
            path,
            acs_transport,
            card_param,
        }
    }

    /// The URL under the partner's URL `agent_url`.
    pub fn at(&self, agent_url: &str) -> String {
        format!("{agent_url}/{}", self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Two rows naming the same thing would make one listing's entry hide another's.
    #[test]
    fn every_url_is_named_once() {
        let mut paths = HashSet::new();
        let mut names = HashSet::new();
        let mut params = HashSet::new();
        for url in DOOR_URLS {
            assert!(paths.insert(url.path), "{url:?}");
            assert!(names.insert((url.door, url.name)), "{url:?}");
            if let Some(param) = url.card_param {
                assert!(params.insert(param), "{url:?}");
            }
            assert!(
                !url.path.starts_with('/') && !url.path.ends_with('/'),
                "{url:?}"
            );
        }
        assert_eq!(
            DOOR_URLS[1].at("http://h/agents/echo"),
            "http://h/agents/echo/process/stop"
        );
    }
}
