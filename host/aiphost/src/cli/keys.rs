//! `aiphost key issue|list|revoke`: Leader API keys for a tenant's partners.

use super::admin::AdminArgs;
use super::output::{Column, Kind, OutputArgs, print_list};
use clap::Subcommand;
use reqwest::Method;
use serde_json::json;

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Issue an API key for a Leader to call a partner; prints the key (shown once).
    Issue {
        /// The partner's id.
        agent: String,
        /// The Leader's AIC: who the key authenticates.
        #[arg(long)]
        leader: String,
        /// How long until the key expires: seconds, or with a unit (`90d`, `12h`) (default:
        /// never).
        #[arg(long, value_parser = aiphost::units::seconds)]
        ttl: Option<u64>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List a partner's keys (ids, Leaders, expiry; never the keys).
    List {
        agent: String,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Revoke a key.
    Revoke {
        /// The partner the key is for.
        agent: String,
        /// The key's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

const KEY_COLUMNS: [Column; 4] = [
    Column::new("id", "/id", Kind::Text),
    Column::new("leader", "/leader", Kind::Text),
    Column::new("created", "/createdMs", Kind::Time),
    Column::new("expires", "/expiresMs", Kind::Time).or("never"),
];

pub async fn run(cmd: KeyCommand) -> anyhow::Result<()> {
    match cmd {
        KeyCommand::Issue {
            agent,
            leader,
            ttl,
            admin,
        } => {
            let issued = admin
                .request(
                    Method::POST,
                    &format!("/admin/agents/{agent}/keys"),
                    Some(&json!({"leader": leader, "ttlSeconds": ttl})),
                )
                .await?;
            println!(
                "key {} for Leader {} on {agent} (shown once):",
                issued["id"].as_str().unwrap_or("?"),
                issued["leader"].as_str().unwrap_or("?")
            );
            println!("{}", issued["key"].as_str().unwrap_or(""));
        }
        KeyCommand::List {
            agent,
            admin,
            output,
        } => {
            let list = admin
                .request(Method::GET, &format!("/admin/agents/{agent}/keys"), None)
                .await?;
            let rows = list["keys"].as_array().cloned().unwrap_or_default();
            print_list(
                output.format(),
                &list["keys"],
                &rows,
                &KEY_COLUMNS,
                &format!("{agent} has no keys"),
            )?;
        }
        KeyCommand::Revoke { agent, id, admin } => {
            admin
                .request(
                    Method::DELETE,
                    &format!("/admin/agents/{agent}/keys/{id}"),
                    None,
                )
                .await?;
            println!("revoked key {id}");
        }
    }
    Ok(())
}
