//! `aiphost notifications`: what a running host's webhook delivery gave up on.

use super::output::{Column, Kind, OutputArgs, print_list};
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum NotificationsCommand {
    /// List notifications the host gave up on after its retry horizon.
    GivenUp {
        #[command(flatten)]
        admin: super::admin::AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
}

const COLUMNS: [Column; 8] = [
    Column::new("agent", "/agent", Kind::Text),
    Column::new("task", "/taskId", Kind::Text),
    Column::new("seq", "/seq", Kind::Number),
    Column::new("state", "/state", Kind::Text),
    Column::new("attempts", "/attempts", Kind::Number),
    Column::new("gave up", "/gaveUpAt", Kind::Time),
    Column::new("url", "/url", Kind::Text),
    Column::new("last error", "/lastError", Kind::Text),
];

pub async fn run(cmd: NotificationsCommand) -> anyhow::Result<()> {
    match cmd {
        NotificationsCommand::GivenUp { admin, output } => {
            let body = admin
                .request(reqwest::Method::GET, "/admin/notifications/given-up", None)
                .await?;
            let list = body["givenUp"].as_array().cloned().unwrap_or_default();
            print_list(
                output.format(),
                &serde_json::Value::Array(list.clone()),
                &list,
                &COLUMNS,
                "no notifications were given up",
            )
        }
    }
}
