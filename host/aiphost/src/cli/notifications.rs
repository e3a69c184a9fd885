//! `aiphost notifications`: what a running host's webhook delivery gave up on.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum NotificationsCommand {
    /// List notifications the host gave up on after its retry horizon.
    GivenUp {
        #[command(flatten)]
        admin: super::admin::AdminArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(cmd: NotificationsCommand) -> anyhow::Result<()> {
    match cmd {
        NotificationsCommand::GivenUp { admin, json } => {
            let body = admin
                .request(reqwest::Method::GET, "/admin/notifications/given-up", None)
                .await?;
            let list = body["givenUp"].as_array().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            if list.is_empty() {
                println!("no notifications were given up");
                return Ok(());
            }
            println!(
                "{:<14} {:<28} {:>5} {:<20} {:>8}  {:<40} last error",
                "agent", "task", "seq", "state", "attempts", "url"
            );
            for n in &list {
                println!(
                    "{:<14} {:<28} {:>5} {:<20} {:>8}  {:<40} {}",
                    n["agent"].as_str().unwrap_or(""),
                    n["taskId"].as_str().unwrap_or(""),
                    n["seq"],
                    n["state"].as_str().unwrap_or(""),
                    n["attempts"],
                    n["url"].as_str().unwrap_or(""),
                    n["lastError"].as_str().unwrap_or(""),
                );
            }
            Ok(())
        }
    }
}
