//! Group mode (spec section 7): hosted partners join RabbitMQ groups on a Leader's invitation,
//! receive its commands from their group queue and publish their task results and membership
//! status on the group's exchange.
//!
//! Each membership is an actor ([`session`]) over one broker link ([`broker`]). Commands go
//! through the same task engine as direct mode and are acknowledged only once their effect is
//! durable; results are published from a durable outbox written with the change they announce,
//! so a crash or a broken link neither loses nor reorders them. Memberships are stored, and
//! resumed when the host restarts.
//!
//! The door's HTTP entry is AIP's `group` method (the AIP door answers it through its
//! `GroupInvitations`, which the server wires to [`groups::Groups`]) or, with `--inbox-broker`,
//! the partners' inboxes ([`inbox`]); its own part of the host is its counters ([`door`]) and its flags ([`flags`]).

pub mod broker;
pub mod config;
pub mod door;
pub mod flags;
pub mod groups;
pub mod inbox;
pub mod inbox_broker;
pub mod links;
pub mod membership;
mod session;
mod shared;
pub mod stats;
pub mod views;
