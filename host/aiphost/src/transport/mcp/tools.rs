//! A partner's tools: one per skill of its manifest. The name is the skill id when it fits the
//! spec's tool-name rule (1–128 of `A-Za-z0-9_.-`), else the id with every other character
//! `_` (and `_2`, `_3` … on a clash); a call finds its skill through this table, never by
//! undoing a name. Title, description and examples are the skill's; the input schema is
//! [`input_schema`]'s; the annotations are the skill's `[skills.annotations]` (hints, as MCP
//! says of its own). After them comes the door's own tool, `aiphost.continue_task`, which
//! answers a form a task of the caller awaits (for clients that cannot be asked one).
//!
//! The host-level `/mcp` ([`HostTools`]) lists the tools of every partner its caller may use,
//! each named `{agent}__{tool}` (agent ids are `[a-z0-9_-]`, within the rule; cut and numbered
//! like any name when that is over 128), in pages of [`PAGE`]; a call finds its partner and the
//! partner's own tool name through that table. Each partner's `aiphost.continue_task` is among
//! them (`{agent}__aiphost.continue_task`), so a form's answer goes to the partner whose task
//! asks, by the task's own AIP id.

use crate::agent::Agent;
use crate::agent::manifest::{Skill, SkillAnnotations};
use crate::protocol::mcp::result::CONTINUE_TASK;
use crate::transport::kit::caller::Caller;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

/// The longest tool name the spec allows.
const MAX_NAME: usize = 128;

/// Tools per `tools/list` page at the host-level `/mcp` (a host can hold many partners).
pub(super) const PAGE: usize = 100;

/// A partner's tools, each with the place of its skill in the manifest.
pub(super) struct Tools {
    entries: Vec<(Tool, usize)>,
}

impl Tools {
    /// The tools of `agent`'s manifest.
    pub(super) fn of(agent: &Agent) -> Self {
        let mut taken = HashSet::new();
        let entries = agent
            .manifest
            .skills
            .iter()
            .enumerate()
            .map(|(index, skill)| {
                let name = unique(tool_name(&skill.id), &mut taken);
                (tool(name, agent, skill), index)
            })
            .collect();
        Tools { entries }
    }

    /// The tools, in the manifest's order, then `aiphost.continue_task`.
    pub(super) fn list(self) -> Vec<Tool> {
        self.entries
            .into_iter()
            .map(|(tool, _)| tool)
            .chain(std::iter::once(continue_task()))
            .collect()
    }

    /// The tool called `name` and the place of its skill in the manifest.
    pub(super) fn find(&self, name: &str) -> Option<(&Tool, usize)> {
        self.entries
            .iter()
            .find(|(tool, _)| tool.name == name)
            .map(|(tool, skill)| (tool, *skill))
    }
}

/// The tools of every partner a host-level caller may use, named `{agent}__{tool}`.
pub(super) struct HostTools<'a> {
    /// Each tool, the partner's caller, and the tool's name at the partner's own server.
    entries: Vec<(Tool, &'a Caller, String)>,
}

impl<'a> HostTools<'a> {
    /// The tools of `callers`' partners, in their order, each partner's in its manifest's.
    pub(super) fn of(callers: &'a [Caller]) -> Self {
        let mut taken = HashSet::new();
        let mut entries = Vec::new();
        for caller in callers {
            for mut tool in Tools::of(&caller.agent).list() {
                let own = tool.name.to_string();
                let name = format!("{}__{own}", caller.agent.id());
                tool.name = unique(tool_name(&name), &mut taken).into();
                entries.push((tool, caller, own));
            }
        }
        HostTools { entries }
    }

    /// The page of tools at `cursor` (an offset, as this door's previous page gave it) and the
    /// next page's cursor; `None` for a cursor this door did not give.
    pub(super) fn page(self, cursor: Option<&str>) -> Option<(Vec<Tool>, Option<String>)> {
        let start = match cursor {
            None => 0,
            Some(text) => text.parse::<usize>().ok()?,
        };
        if start > self.entries.len() {
            return None;
        }
        let end = (start + PAGE).min(self.entries.len());
        let next = (end < self.entries.len()).then(|| end.to_string());
        let tools = self
            .entries
            .into_iter()
            .skip(start)
            .take(end - start)
            .map(|(tool, _, _)| tool)
            .collect();
        Some((tools, next))
    }

    /// The partner of the tool called `name` and that tool's name at the partner's server.
    pub(super) fn route(&self, name: &str) -> Option<(&'a Caller, &str)> {
        self.entries
            .iter()
            .find(|(tool, _, _)| tool.name == name)
            .map(|(_, caller, own)| (*caller, own.as_str()))
    }
}

/// The input schema of `skill`'s tool: the skill's own `input-schema` when its manifest gives
/// one, else the default: a `text` (the request) and an optional `data` object.
pub(super) fn input_schema(skill: &Skill) -> JsonObject {
    skill.input_schema().cloned().unwrap_or_else(default_schema)
}

/// The skill's annotations in MCP's words.
fn annotations(a: &SkillAnnotations) -> ToolAnnotations {
    ToolAnnotations::from_raw(
        a.title.clone(),
        a.read_only,
        a.destructive,
        a.idempotent,
        a.open_world,
    )
}

/// `{"text": string (required), "data": object}`, nothing else.
pub(super) fn default_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to ask of the partner"},
            "data": {"type": "object", "description": "Structured input, sent beside the text"},
        },
        "required": ["text"],
        "additionalProperties": false,
    });
    match schema {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The door's own tool: `{taskId (required), values, action}` answers the form the caller's
/// task awaits, as a client that can be asked would (`forms.rs`).
fn continue_task() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "taskId": {"type": "string", "description": "The task that asks (the taskId of the call's result)"},
            "values": {"type": "object", "description": "The answer: values matching the form's schema"},
            "action": {
                "type": "string",
                "enum": ["accept", "decline", "cancel"],
                "default": "accept",
                "description": "accept answers with the values; decline or cancel cancels the task",
            },
        },
        "required": ["taskId"],
        "additionalProperties": false,
    });
    let schema = match schema {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    let description = "Answer the form a task of yours asks (a call's result said input is \
                       required): its taskId and the values, or action decline / cancel to \
                       cancel the task. Returns the call's result, or the next form.";
    Tool::new(CONTINUE_TASK, description, Arc::new(schema)).with_title("Continue a task")
}

/// `skill`'s tool (a skill of `agent`), named `name`.
fn tool(name: String, agent: &Agent, skill: &Skill) -> Tool {
    let mut description = skill.description.clone();
    for example in &skill.examples {
        description.push_str("\nExample: ");
        description.push_str(example);
    }
    let mut tool =
        Tool::new(name, description, Arc::new(input_schema(skill))).with_title(skill.name.clone());
    tool.annotations = skill.annotations.as_ref().map(annotations);
    let mut meta = rmcp::model::MetaObject::default();
    meta.0.insert("aiphost.agent".into(), json!(agent.id()));
    meta.0.insert("aiphost.skill".into(), json!(skill.id));
    tool.meta = Some(meta);
    tool
}

/// `id` within the tool-name rule: other characters `_`, cut to the longest name allowed.
fn tool_name(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if name.is_empty() { "_".into() } else { name }
}

/// `name`, or `name_2`, `name_3` … if taken (cut so the suffix fits); marked taken.
fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let keep = MAX_NAME.saturating_sub(suffix.len()).min(name.len());
        candidate = format!("{}{suffix}", &name[..keep]);
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::manifest::Manifest;

    /// A partner `id` with `skills` (TOML of `[[skills]]` tables).
    fn agent(id: &str, skills: &str) -> Arc<Agent> {
        let text = format!(
            "[agent]\nid = \"{id}\"\naic = \"1.2.156.3088.1.1.AIPHST.T{}.1.0000\"\nname = \"N\"\n\
             description = \"d\"\nversion = \"0.1.0\"\n{skills}",
            id.len()
        );
        let manifest = Manifest::parse(&text, "test").expect("manifest");
        Arc::new(Agent {
            skill_inputs: crate::agent::skill_schema::SkillInputs::compile(&manifest),
            manifest,
            code: crate::agent::code::Code::missing(),
            loaded_at: crate::model::Timestamp::now(),
            bundle: "test".into(),
            version: 0,
            tenant: None,
            list_tasks: false,
            rate: None,
        })
    }

    fn skill(id: &str) -> String {
        format!("[[skills]]\nid = \"{id}\"\nname = \"S\"\ndescription = \"d\"\n")
    }

    #[test]
    fn a_skills_schema_and_annotations_make_its_tool() {
        let typed = agent(
            "typed",
            &format!(
                "{}{}[skills.input-schema]\ntype = \"object\"\nproperties.city = {{ type = \"string\" }}\n\
                 [skills.annotations]\ntitle = \"Trip\"\nread-only = true\nopen-world = false\n",
                skill("plain"),
                skill("trip")
            ),
        );
        let tools = Tools::of(&typed).list();
        assert_eq!(tools[0].input_schema.as_ref(), &default_schema());
        assert_eq!(tools[0].annotations, None);
        assert_eq!(
            Value::Object(tools[1].input_schema.as_ref().clone()),
            json!({"type": "object", "properties": {"city": {"type": "string"}}})
        );
        let hints = tools[1].annotations.clone().expect("annotations");
        assert_eq!(hints.title.as_deref(), Some("Trip"));
        assert_eq!(hints.read_only_hint, Some(true));
        assert_eq!(hints.open_world_hint, Some(false));
        assert_eq!(hints.destructive_hint, None);
        let meta = tools[1].meta.clone().expect("meta").0;
        assert_eq!(meta["aiphost.agent"], "typed");
        assert_eq!(meta["aiphost.skill"], "trip");
        assert_eq!(Tools::of(&typed).find("trip").map(|(_, i)| i), Some(1));
    }

    #[test]
    fn host_tools_are_prefixed_paged_and_routed() {
        let many: String = (0..150).map(|i| skill(&format!("s{i}"))).collect();
        let callers = vec![
            Caller {
                agent: agent("echo", &skill("echo")),
                owner: None,
            },
            Caller {
                agent: agent("big", &many),
                owner: Some("L".into()),
            },
        ];
        let (first, next) = HostTools::of(&callers).page(None).expect("a page");
        assert_eq!(first.len(), PAGE);
        // Each partner's tools, then its own aiphost.continue_task (its tasks' forms).
        assert_eq!(first[0].name, "echo__echo");
        assert_eq!(first[1].name, "echo__aiphost.continue_task");
        assert_eq!(first[2].name, "big__s0");
        assert_eq!(next.as_deref(), Some("100"));
        let (second, next) = HostTools::of(&callers).page(Some("100")).expect("a page");
        assert_eq!(second.len(), 53);
        assert_eq!(second[51].name, "big__s149");
        assert_eq!(second[52].name, "big__aiphost.continue_task");
        assert_eq!(next, None);
        assert!(HostTools::of(&callers).page(Some("x")).is_none());
        assert!(HostTools::of(&callers).page(Some("999")).is_none());

        let table = HostTools::of(&callers);
        let (caller, own) = table.route("big__s7").expect("routed");
        assert_eq!((caller.agent.id(), own), ("big", "s7"));
        assert_eq!(caller.owner.as_deref(), Some("L"));
        assert!(table.route("s7").is_none());
        let (caller, own) = table.route("echo__aiphost.continue_task").expect("routed");
        assert_eq!((caller.agent.id(), own), ("echo", CONTINUE_TASK));
        assert!(table.route("echo__s7").is_none());

        // A name over 128 is cut, and stays unique.
        let long = agent(
            "long",
            &format!(
                "{}{}",
                skill(&"x".repeat(127)),
                skill(&format!("{}y", "x".repeat(127)))
            ),
        );
        let callers = [Caller {
            agent: long,
            owner: None,
        }];
        let (tools, _) = HostTools::of(&callers).page(None).expect("a page");
        assert!(tools.iter().all(|t| t.name.len() <= MAX_NAME));
        assert_ne!(tools[0].name, tools[1].name);
        assert_eq!(
            HostTools::of(&callers)
                .route(&tools[1].name)
                .map(|(_, own)| own.len()),
            Some(128)
        );
    }

    #[test]
    fn names_keep_the_rule_and_clashes_are_numbered() {
        assert_eq!(tool_name("echo"), "echo");
        assert_eq!(tool_name("plan a trip/2"), "plan_a_trip_2");
        assert_eq!(tool_name("é"), "_");
        assert_eq!(tool_name(&"x".repeat(200)).len(), MAX_NAME);
        let mut taken = HashSet::new();
        assert_eq!(unique("a_b".into(), &mut taken), "a_b");
        assert_eq!(unique("a_b".into(), &mut taken), "a_b_2");
        assert_eq!(unique("a_b".into(), &mut taken), "a_b_3");
        let long = "y".repeat(MAX_NAME);
        assert_eq!(unique(long.clone(), &mut taken), long);
        let second = unique(long.clone(), &mut taken);
        assert_eq!(second.len(), MAX_NAME);
        assert!(second.ends_with("_2"));
    }
}
