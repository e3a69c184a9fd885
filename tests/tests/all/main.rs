//! aiphost's end-to-end tests, in one binary so the suite links wasmtime once: a real host over
//! real HTTP on 127.0.0.1, real partner components built from `plugins/`, a real sled store in a
//! temporary directory, a real RabbitMQ and the real reference SDK. One module per area.

mod a2a;
mod a2a_push;
mod a2a_sdk;
mod a2a_v03;
mod agent_api;
mod agent_api_door;
mod agent_api_sdk;
mod aiflowy;
mod cli;
mod dev;
mod durability;
mod endpoints;
mod first_hour;
mod full_disk;
mod group;
mod hostile;
mod hostile_talk;
mod install;
mod interop_acps_sdk;
mod js_partners;
mod mcp_sdk;
mod mtls;
mod notification;
mod open_partners;
mod outbound;
mod partner_versions;
mod python_partners;
mod quotas;
mod retention;
mod rpc_errors;
mod rpc_lifecycle;
mod runtime;
mod sandbox;
mod skill_manifest;
mod slow_chat_clients;
mod slow_clients;
mod spec_examples;
mod store_damage;
mod streaming;
mod streaming_process;
mod talking;
mod tenancy;
mod tenant_removal;
mod wide_partners;
