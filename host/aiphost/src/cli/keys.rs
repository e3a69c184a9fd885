//! `aiphost key issue|list|revoke`: Leader API keys for a tenant's partners.

use super::admin::AdminArgs;
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
        /// Seconds until the key expires (default: never).
        #[arg(long)]
        ttl: Option<u64>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List a partner's keys (ids, Leaders, expiry; never the keys).
    List {
        agent: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Revoke a key.
    Revoke {
        agent: String,
        /// The key's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

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
        KeyCommand::List { agent, admin } => {
            let list = admin
                .request(Method::GET, &format!("/admin/agents/{agent}/keys"), None)
                .await?;
            println!("{}", serde_json::to_string_pretty(&list["keys"])?);
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
