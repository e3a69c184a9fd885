//! `aiphost groups`: the group memberships of a running host's partners.

use super::output::{Column, Kind, OutputArgs, print_list};
use clap::Args;

#[derive(Args, Debug)]
pub struct GroupsArgs {
    #[command(flatten)]
    admin: super::admin::AdminArgs,
    #[command(flatten)]
    output: OutputArgs,
}

const COLUMNS: [Column; 10] = [
    Column::new("agent", "/agent", Kind::Text),
    Column::new("group", "/groupId", Kind::Text),
    Column::new("state", "/state", Kind::Text),
    Column::new("muted", "/muted", Kind::Text),
    Column::new("dialect", "/dialect", Kind::Text),
    Column::new("broker", "/broker", Kind::Text),
    Column::new("leader", "/leader", Kind::Text),
    Column::new("queue", "/queue", Kind::Text),
    Column::new("joined", "/joinedAt", Kind::Time),
    Column::new("last error", "/lastError", Kind::Text).or(""),
];

pub async fn run(args: GroupsArgs) -> anyhow::Result<()> {
    let body = args
        .admin
        .request(reqwest::Method::GET, "/admin/groups", None)
        .await?;
    let list = body["memberships"].as_array().cloned().unwrap_or_default();
    print_list(
        args.output.format(),
        &serde_json::Value::Array(list.clone()),
        &list,
        &COLUMNS,
        "no group memberships",
    )
}
