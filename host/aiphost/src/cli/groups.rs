//! `aiphost groups`: the group memberships of a running host's partners.

use clap::Args;

#[derive(Args, Debug)]
pub struct GroupsArgs {
    #[command(flatten)]
    admin: super::admin::AdminArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: GroupsArgs) -> anyhow::Result<()> {
    let body = args
        .admin
        .request(reqwest::Method::GET, "/admin/groups", None)
        .await?;
    let list = body["memberships"].as_array().cloned().unwrap_or_default();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    if list.is_empty() {
        println!("no group memberships");
        return Ok(());
    }
    println!(
        "{:<14} {:<20} {:<13} {:<6} {:<8} {:<24} leader / queue",
        "agent", "group", "state", "muted", "dialect", "broker"
    );
    for m in &list {
        let text = |k: &str| m[k].as_str().unwrap_or("").to_string();
        println!(
            "{:<14} {:<20} {:<13} {:<6} {:<8} {:<24} {} / {}",
            text("agent"),
            text("groupId"),
            text("state"),
            m["muted"].as_bool().unwrap_or(false),
            text("dialect"),
            text("broker"),
            text("leader"),
            text("queue"),
        );
        if let Some(error) = m["lastError"].as_str() {
            println!("{:<14} last error: {error}", "");
        }
    }
    Ok(())
}
