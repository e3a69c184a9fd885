//! Group mode on the wire (spec section 7, and acps-sdk 2.1.0's form of it): the invitation, what
//! arrives on a partner's group queue, and the membership status a partner publishes. Pure: the
//! broker side lives elsewhere.

use super::dialect::{self, Dialect};
use crate::jsonrpc::{ErrorCode, RpcError};
use aiphost_model::values::Mentions;
use aiphost_model::{Inbound, JsonObject, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How the partner logs in to the group's broker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Credentials {
    /// `accessToken` of the form `user:password` (what acps-sdk sends).
    UserPassword {
        /// The part before the first `:`, never empty.
        user: String,
        /// The rest.
        password: String,
    },
    /// Any other `accessToken`: a bearer-style token, sent as the password (the v1 spec's form).
    Token(String),
    /// No `accessToken`: SASL EXTERNAL with the partner's TLS client certificate.
    External,
}

/// The broker a group lives on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// The broker's host name or address (`params.server.host`, never empty).
    pub host: String,
    /// The broker's AMQP port (`params.server.port`).
    pub port: u16,
    /// The virtual host (`params.server.vhost`; `/` when absent).
    pub vhost: String,
    /// How to log in, read from `params.server.accessToken`.
    pub credentials: Credentials,
}

/// A `group` invitation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invitation {
    /// e.g. `rabbitmq:4.0`.
    pub protocol: String,
    /// The group's id (`params.group.groupId`, never empty).
    pub group_id: String,
    /// The inviting Leader's AIC (`params.group.leader.aic`).
    pub leader_aic: String,
    /// The AICs of the invited partners (`params.group.partners[].aic`).
    pub partner_aics: Vec<String>,
    /// The broker (`params.server`).
    pub server: Server,
    /// The group's exchange (`params.amqp.exchange`).
    pub exchange: String,
    /// The exchange's type (`params.amqp.exchangeType`; `fanout` when absent).
    pub exchange_type: String,
    /// The routing key to bind and publish with (`params.amqp.routingKey`; empty when absent).
    pub routing_key: String,
}

impl Invitation {
    /// The partner's queue, named as acps-sdk names it: `group_{leader}_{group}_{partner}`.
    pub fn queue_name(&self, partner_aic: &str) -> String {
        format!(
            "group_{}_{}_{}",
            self.leader_aic, self.group_id, partner_aic
        )
    }

    /// The dialect the group most likely speaks, before its Leader has said anything: v02.01
    /// names the exchange `group_{leader}_{group}` (and acps-sdk does), v01.00 names it freely.
    pub fn dialect_hint(&self) -> Dialect {
        if self.exchange == format!("group_{}_{}", self.leader_aic, self.group_id) {
            Dialect::V2
        } else {
            Dialect::V1
        }
    }
}

fn field<'a>(obj: &'a JsonObject, path: &str, key: &str) -> Result<&'a Value, RpcError> {
    obj.get(key)
        .filter(|v| !v.is_null())
        .ok_or_else(|| RpcError::invalid_params(&format!("{path}.{key}"), "is required"))
}

fn text<'a>(obj: &'a JsonObject, path: &str, key: &str) -> Result<&'a str, RpcError> {
    field(obj, path, key)?
        .as_str()
        .ok_or_else(|| RpcError::invalid_params(&format!("{path}.{key}"), "must be a string"))
}

fn object<'a>(obj: &'a JsonObject, path: &str, key: &str) -> Result<&'a JsonObject, RpcError> {
    field(obj, path, key)?
        .as_object()
        .ok_or_else(|| RpcError::invalid_params(&format!("{path}.{key}"), "must be an object"))
}

/// Read a `group` invitation's params.
pub fn parse_invitation(params: &Value) -> Result<Invitation, RpcError> {
    let p = params
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("params", "must be an object"))?;
    let protocol = text(p, "params", "protocol")?.to_string();
    if !protocol.to_ascii_lowercase().starts_with("rabbitmq")
        && !protocol.to_ascii_lowercase().starts_with("amqp")
    {
        return Err(RpcError::new(
            ErrorCode::GroupNotSupported,
            json!({"field": "params.protocol", "protocol": protocol, "reason": "this host joins groups over RabbitMQ (AMQP 0.9.1) only"}),
        ));
    }
    let group = object(p, "params", "group")?;
    let leader = object(group, "params.group", "leader")?;
    let partners = match field(group, "params.group", "partners")? {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.get("aic")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        RpcError::invalid_params(
                            &format!("params.group.partners[{i}].aic"),
                            "is required",
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => {
            return Err(RpcError::invalid_params(
                "params.group.partners",
                "must be a list",
            ));
        }
    };
    let server = object(p, "params", "server")?;
    let port = field(server, "params.server", "port")?
        .as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            RpcError::invalid_params("params.server.port", "must be a port number (1-65535)")
        })?;
    let credentials = match server.get("accessToken") {
        None | Some(Value::Null) => Credentials::External,
        Some(Value::String(token)) => match token.split_once(':') {
            Some((user, password)) if !user.is_empty() => Credentials::UserPassword {
                user: user.to_string(),
                password: password.to_string(),
            },
            _ => Credentials::Token(token.clone()),
        },
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.server.accessToken",
                "must be a string",
            ));
        }
    };
    let amqp = object(p, "params", "amqp")?;
    let group_id = text(group, "params.group", "groupId")?;
    if group_id.is_empty() {
        return Err(RpcError::invalid_params(
            "params.group.groupId",
            "must not be empty",
        ));
    }
    Ok(Invitation {
        protocol,
        group_id: group_id.to_string(),
        leader_aic: text(leader, "params.group.leader", "aic")?.to_string(),
        partner_aics: partners,
        server: Server {
            host: match text(server, "params.server", "host")? {
                "" => {
                    return Err(RpcError::invalid_params(
                        "params.server.host",
                        "must not be empty",
                    ));
                }
                host => host.to_string(),
            },
            port,
            vhost: server
                .get("vhost")
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string(),
            credentials,
        },
        exchange: text(amqp, "params.amqp", "exchange")?.to_string(),
        exchange_type: amqp
            .get("exchangeType")
            .and_then(Value::as_str)
            .unwrap_or("fanout")
            .to_string(),
        routing_key: amqp
            .get("routingKey")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// The reason a Leader is given for any join that failed on the way to the broker or at it:
/// one text whatever happened, so that invitations cannot tell a closed port from a refused
/// login or an address the host may not reach, and so cannot scan what the host reaches.
pub const JOIN_FAILED: &str = "the host could not join the group on this broker (unreachable, \
     refused, or not allowed by the host's policy); the host's log has the cause";

/// The -32603 answer to an invitation the host could not act on (spec 7.3 (1)).
pub fn connection_failed(server: &Server, reason: impl Into<String>) -> RpcError {
    RpcError::new(
        ErrorCode::InternalError,
        json!({
            "errorType": "CONNECTION_FAILED",
            "details": {"host": server.host, "port": server.port, "vhost": server.vhost, "reason": reason.into()},
        }),
    )
}

/// A group management command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MgmtCommand {
    /// `get-status`: report whether connected and muted.
    GetStatus,
    /// `mute`: act only on commands addressed to this partner (named in `mentions`, or `all`).
    Mute,
    /// `unmute`: take commands addressed to nobody again (as the host's policy says).
    Unmute,
    /// `leave-group`: leave the group.
    LeaveGroup,
    /// `disband`: the group is over; leave it.
    Disband,
}

impl MgmtCommand {
    /// The management command named exactly `text` (no trimming or folding, like task commands).
    fn parse(text: &str) -> Option<Self> {
        match text {
            "get-status" => Some(MgmtCommand::GetStatus),
            "mute" => Some(MgmtCommand::Mute),
            "unmute" => Some(MgmtCommand::Unmute),
            "leave-group" => Some(MgmtCommand::LeaveGroup),
            "disband" => Some(MgmtCommand::Disband),
            _ => None,
        }
    }
}

/// A management command from the Leader.
#[derive(Clone, Debug, PartialEq)]
pub struct Mgmt {
    /// The dialect it came in (v1 `group-mgmt-message`, v2 `group-mgmt-command`).
    pub dialect: Dialect,
    /// What the Leader asks.
    pub command: MgmtCommand,
    /// Who says it comes from it (`senderId`; empty when absent).
    pub sender_id: String,
    /// Whom it addresses (`mentions`).
    pub mentions: Option<Mentions>,
    /// The group it names (`groupId`).
    pub group_id: Option<String>,
    /// The session it names (`sessionId`).
    pub session_id: Option<String>,
}

/// What arrived on a partner's group queue.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupInbound {
    /// A task command from the Leader (v1 `message`, v2 `task-command`).
    Command(Box<Inbound>),
    /// A management command from the Leader.
    Mgmt(Mgmt),
    /// This partner's own message, come back on the fanout.
    Own,
    /// Another member's message (a partner's task result or status): not for this partner.
    Other,
}

/// Classify one message from the group queue of the partner `my_aic`.
pub fn classify(bytes: &[u8], my_aic: &str) -> Result<GroupInbound, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let obj = value.as_object().ok_or("not a JSON object")?;
    let sender = obj
        .get("senderId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let role = obj
        .get("senderRole")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if sender == my_aic {
        return Ok(GroupInbound::Own);
    }
    if role == "partner" {
        return Ok(GroupInbound::Other);
    }
    let mentions = obj
        .get("mentions")
        .filter(|v| !v.is_null())
        .map(|v| {
            serde_json::from_value::<Mentions>(v.clone())
                .map_err(|_| "mentions must be \"all\" or a list".to_string())
        })
        .transpose()?;
    let string = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    match obj.get("type").and_then(Value::as_str) {
        Some("message") | Some("task-command") => dialect::parse_command(json!({"message": value}))
            .map(|inbound| GroupInbound::Command(Box::new(inbound)))
            .map_err(|e| e.to_string()),
        Some("group-mgmt-command") => Ok(GroupInbound::Mgmt(Mgmt {
            dialect: Dialect::V2,
            sender_id: sender.to_string(),
            command: string("command")
                .and_then(|c| MgmtCommand::parse(&c))
                .ok_or("unknown management command")?,
            mentions,
            group_id: string("groupId"),
            session_id: string("sessionId"),
        })),
        Some("group-mgmt-message") => Ok(GroupInbound::Mgmt(Mgmt {
            dialect: Dialect::V1,
            sender_id: sender.to_string(),
            command: string("groupMgmtCommand")
                .and_then(|c| MgmtCommand::parse(&c))
                .ok_or("unknown groupMgmtCommand")?,
            mentions,
            group_id: string("groupId"),
            session_id: string("sessionId"),
        })),
        Some("task") | Some("task-result") | Some("group-mgmt-result") => Ok(GroupInbound::Other),
        Some(other) => Err(format!("unknown message type {other:?}")),
        None => Err("a group message needs a type".into()),
    }
}

/// Whom a message is addressed to, from one partner's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressed {
    /// It names this partner (or `all`): it must respond.
    Me,
    /// It names others only: not for this partner.
    Others,
    /// It names nobody: the partner decides (policy).
    Nobody,
}

/// Who `mentions` addresses, for the partner `my_aic`.
pub fn addressed(mentions: Option<&Mentions>, my_aic: &str) -> Addressed {
    match mentions {
        None => Addressed::Nobody,
        Some(Mentions::All(_)) => Addressed::Me,
        Some(Mentions::List(list)) if list.is_empty() => Addressed::Nobody,
        Some(Mentions::List(list)) if list.iter().any(|a| a == my_aic) => Addressed::Me,
        Some(Mentions::List(_)) => Addressed::Others,
    }
}

/// A partner's membership status message, in the group's dialect.
pub fn render_member_status(
    dialect: Dialect,
    my_aic: &str,
    group_id: &str,
    session_id: Option<&str>,
    connected: bool,
    muted: bool,
) -> Value {
    let status = json!({"connected": connected, "muted": muted});
    let mut msg = match dialect {
        Dialect::V2 => json!({
            "type": "group-mgmt-result",
            "id": format!("mgmt-result-{}", uuid::Uuid::new_v4()),
            "sentAt": Timestamp::now(),
            "senderRole": "partner",
            "senderId": my_aic,
            "dataItems": [],
            "groupId": group_id,
            "status": status,
        }),
        Dialect::V1 => json!({
            "type": "group-mgmt-message",
            "id": format!("mgmt-msg-{}", uuid::Uuid::new_v4()),
            "sentAt": Timestamp::now(),
            "senderRole": "partner",
            "senderId": my_aic,
            "groupId": group_id,
            "groupMemberStatus": status,
        }),
    };
    if let Some(session) = session_id {
        msg["sessionId"] = json!(session);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::values::{AllMarker, CommandKind};

    const ME: &str = "1.2.156.3088.1.1.INTOP.ECHO.1.0000";

    fn capture() -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/specs/acps-sdk-2.1.0-group-wire-capture.txt");
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_reference_sdk_invitation() {
        let capture = capture();
        let invite = capture
            .lines()
            .find_map(|l| l.strip_prefix("INVITE >>> "))
            .unwrap();
        let request: Value = serde_json::from_str(invite).unwrap();
        let inv = parse_invitation(&request["params"]).unwrap();
        assert_eq!(inv.group_id, "cap-8df632");
        assert_eq!(inv.leader_aic, "1.2.156.3088.1.1.INTOP.LEADER.1.0000");
        assert_eq!(inv.partner_aics, [ME]);
        assert_eq!(
            inv.server.credentials,
            Credentials::UserPassword {
                user: "guest".into(),
                password: "guest".into()
            }
        );
        assert_eq!(
            inv.exchange,
            "group_1.2.156.3088.1.1.INTOP.LEADER.1.0000_cap-8df632"
        );
        // The queue name the capture's reply reports.
        let reply: Value = serde_json::from_str(
            capture
                .lines()
                .find_map(|l| l.strip_prefix("REPLY <<< "))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(inv.queue_name(ME), reply["result"]["queueName"]);
        assert_eq!(inv.dialect_hint(), Dialect::V2);
    }

    #[test]
    fn the_v1_spec_invitation_and_errors() {
        let params = json!({
            "protocol": "rabbitmq:4.0",
            "group": {"groupId": "group123", "leader": {"aic": "agent-leader-aic", "skills": ["x"]},
                      "partners": [{"aic": "agent-partner-1"}, {"aic": "agent-partner-2"}]},
            "server": {"host": "mq.example.com", "port": 5672, "vhost": "/vhost-leader-aic", "accessToken": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9..."},
            "amqp": {"exchange": "group-exchange-123", "exchangeType": "fanout", "routingKey": ""}
        });
        let inv = parse_invitation(&params).unwrap();
        assert_eq!(inv.dialect_hint(), Dialect::V1);
        assert!(
            matches!(inv.server.credentials, Credentials::Token(_)),
            "a JWT-like token is a password"
        );
        let mut no_token = params.clone();
        no_token["server"]
            .as_object_mut()
            .unwrap()
            .remove("accessToken");
        assert_eq!(
            parse_invitation(&no_token).unwrap().server.credentials,
            Credentials::External
        );
        let mut bad_port = params.clone();
        bad_port["server"]["port"] = json!(70000);
        assert_eq!(
            parse_invitation(&bad_port).unwrap_err().data["field"],
            "params.server.port"
        );
        let mut no_host = params.clone();
        no_host["server"]["host"] = json!("");
        assert_eq!(
            parse_invitation(&no_host).unwrap_err().data["field"],
            "params.server.host"
        );
        let mut no_exchange = params.clone();
        no_exchange["amqp"]
            .as_object_mut()
            .unwrap()
            .remove("exchange");
        assert_eq!(
            parse_invitation(&no_exchange).unwrap_err().data["field"],
            "params.amqp.exchange"
        );
        let mut kafka = params.clone();
        kafka["protocol"] = json!("kafka:3.0");
        assert_eq!(parse_invitation(&kafka).unwrap_err().code, -32007);
        let err = connection_failed(&inv.server, "connection refused");
        assert_eq!(
            (err.code, err.data["errorType"].clone()),
            (-32603, json!("CONNECTION_FAILED"))
        );
        assert_eq!(err.data["details"]["host"], "mq.example.com");
    }

    #[test]
    fn the_wire_capture_classifies() {
        let kinds: Vec<String> = capture()
            .lines()
            .filter_map(|l| l.strip_prefix("MQ "))
            .map(|m| match classify(m.as_bytes(), ME).unwrap() {
                GroupInbound::Command(i) => {
                    format!(
                        "command:{}:{:?}",
                        i.command.command,
                        Dialect::of(i.form.as_ref())
                    )
                }
                GroupInbound::Mgmt(m) => format!("mgmt:{:?}:{:?}", m.command, m.dialect),
                GroupInbound::Own => "own".into(),
                GroupInbound::Other => "other".into(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "own",
                "command:start:V2",
                "own",
                "own",
                "mgmt:GetStatus:V2",
                "own",
                "mgmt:LeaveGroup:V2",
                "own"
            ]
        );
        // Another partner sees the echo partner's results as someone else's.
        let start = capture()
            .lines()
            .filter_map(|l| l.strip_prefix("MQ "))
            .nth(1)
            .unwrap()
            .to_string();
        let GroupInbound::Command(inbound) = classify(start.as_bytes(), "someone-else").unwrap()
        else {
            panic!("a command")
        };
        assert_eq!(inbound.command.command, CommandKind::Start);
        assert_eq!(inbound.command.group_id.as_deref(), Some("cap-8df632"));
        assert_eq!(
            addressed(inbound.command.mentions.as_ref(), ME),
            Addressed::Me
        );
        assert_eq!(
            addressed(inbound.command.mentions.as_ref(), "someone-else"),
            Addressed::Others
        );
    }

    #[test]
    fn v1_management_messages_and_addressing() {
        let leave = json!({"type": "group-mgmt-message", "id": "m", "sentAt": "2025-09-01T12:30:00+08:00",
            "senderRole": "leader", "senderId": "agent-leader-aic", "groupMgmtCommand": "leave-group",
            "mentions": ["agent-partner-1"]});
        let GroupInbound::Mgmt(m) =
            classify(leave.to_string().as_bytes(), "agent-partner-1").unwrap()
        else {
            panic!("mgmt")
        };
        assert_eq!(
            (m.command, m.dialect),
            (MgmtCommand::LeaveGroup, Dialect::V1)
        );
        assert_eq!(
            addressed(m.mentions.as_ref(), "agent-partner-1"),
            Addressed::Me
        );
        assert_eq!(addressed(None, "x"), Addressed::Nobody);
        assert_eq!(
            addressed(Some(&Mentions::List(vec![])), "x"),
            Addressed::Nobody
        );
        assert_eq!(
            addressed(Some(&Mentions::All(AllMarker::All)), "x"),
            Addressed::Me
        );
        assert!(classify(b"{\"type\": \"gossip\"}", "x").is_err());
        assert!(classify(b"not json", "x").is_err());
    }

    #[test]
    fn member_status_in_both_dialects() {
        let v2 = render_member_status(Dialect::V2, ME, "g", Some("s"), true, false);
        assert_eq!(v2["type"], "group-mgmt-result");
        assert_eq!(v2["status"], json!({"connected": true, "muted": false}));
        assert_eq!(v2["sessionId"], "s");
        assert_eq!(v2["senderRole"], "partner");
        // What the host publishes classifies as its own when it comes back.
        assert_eq!(
            classify(v2.to_string().as_bytes(), ME).unwrap(),
            GroupInbound::Own
        );
        let v1 = render_member_status(Dialect::V1, ME, "g", None, false, false);
        assert_eq!(v1["type"], "group-mgmt-message");
        assert_eq!(
            v1["groupMemberStatus"],
            json!({"connected": false, "muted": false})
        );
        assert!(v1.get("sessionId").is_none());
    }
}
