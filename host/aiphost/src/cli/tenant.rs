//! `aiphost tenant create|list|remove`: the operator's side of tenancy.

use super::admin::AdminArgs;
use super::output::{Column, Kind, OutputArgs, print_list};
use clap::Subcommand;
use reqwest::Method;
use serde_json::json;

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant and print its admin token (shown once).
    Create {
        /// The tenant's id (a-z, 0-9, '-', '_').
        id: String,
        /// Quotas as JSON, e.g. '{"maxAgents": 5, "requestsPerSecond": 50}' (default: the host's).
        #[arg(long)]
        quotas: Option<String>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List tenants with their partners, quotas and stored bytes.
    List {
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Remove a tenant: its partners stop serving and its tokens and keys stop working.
    Remove {
        /// The tenant's id.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

const TENANT_COLUMNS: [Column; 6] = [
    Column::new("tenant", "/id", Kind::Text),
    Column::new("state", "/state", Kind::Text),
    Column::new("created", "/createdMs", Kind::Time),
    Column::new("stored", "/storedBytes", Kind::Bytes),
    Column::new("agents", "/agents", Kind::List),
    Column::new("quotas", "/quotas", Kind::Text),
];

pub async fn run(cmd: TenantCommand) -> anyhow::Result<()> {
    match cmd {
        TenantCommand::Create { id, quotas, admin } => {
            let mut body = json!({ "id": id });
            if let Some(quotas) = quotas {
                body["quotas"] = serde_json::from_str(&quotas)
                    .map_err(|e| anyhow::anyhow!("--quotas is not JSON: {e}"))?;
            }
            let created = admin
                .request(Method::POST, "/admin/tenants", Some(&body))
                .await?;
            println!(
                "created tenant {}",
                created["tenant"].as_str().unwrap_or("?")
            );
            println!("admin token (shown once; keep it safe):");
            println!("{}", created["adminToken"].as_str().unwrap_or(""));
        }
        TenantCommand::List { admin, output } => {
            let list = admin.request(Method::GET, "/admin/tenants", None).await?;
            let rows = list["tenants"].as_array().cloned().unwrap_or_default();
            print_list(
                output.format(),
                &list["tenants"],
                &rows,
                &TENANT_COLUMNS,
                "no tenants",
            )?;
        }
        TenantCommand::Remove { id, admin } => {
            admin
                .request(Method::DELETE, &format!("/admin/tenants/{id}"), None)
                .await?;
            println!(
                "removing tenant {id}: it is gone from the API now; its data is deleted in the background (`aiphost tenant list` shows it as removing until then)"
            );
        }
    }
    Ok(())
}
