//! A partner's tools: one per skill of its manifest. The name is the skill id when it fits the
//! spec's tool-name rule (1–128 of `A-Za-z0-9_.-`), else the id with every other character
//! `_` (and `_2`, `_3` … on a clash); a call finds its skill through this table, never by
//! undoing a name. Title, description and examples are the skill's; the input schema is
//! [`input_schema`]'s. After them comes the door's own tool, `aiphost.continue_task`, which
//! answers a form a task of the caller awaits (for clients that cannot be asked one).

use crate::agent::Agent;
use crate::agent::manifest::Skill;
use crate::protocol::mcp::result::CONTINUE_TASK;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

/// The longest tool name the spec allows.
const MAX_NAME: usize = 128;

/// A partner's tools, each with the skill it runs.
pub(super) struct Tools {
    entries: Vec<(Tool, String)>,
}

impl Tools {
    /// The tools of `agent`'s manifest.
    pub(super) fn of(agent: &Agent) -> Self {
        let mut taken = HashSet::new();
        let entries = agent
            .manifest
            .skills
            .iter()
            .map(|skill| {
                let name = unique(tool_name(&skill.id), &mut taken);
                (tool(name, skill), skill.id.clone())
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

    /// The tool called `name` and its skill's id.
    pub(super) fn find(&self, name: &str) -> Option<(&Tool, &str)> {
        self.entries
            .iter()
            .find(|(tool, _)| tool.name == name)
            .map(|(tool, skill)| (tool, skill.as_str()))
    }
}

/// The input schema of `skill`'s tool. Every skill takes the default today: a `text` (the
/// request) and an optional `data` object; a skill that declares its own schema in its manifest
/// will be answered here.
pub(super) fn input_schema(_skill: &Skill) -> JsonObject {
    default_schema()
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

/// `skill`'s tool, named `name`.
fn tool(name: String, skill: &Skill) -> Tool {
    let mut description = skill.description.clone();
    for example in &skill.examples {
        description.push_str("\nExample: ");
        description.push_str(example);
    }
    let mut tool =
        Tool::new(name, description, Arc::new(input_schema(skill))).with_title(skill.name.clone());
    let mut meta = rmcp::model::MetaObject::default();
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
