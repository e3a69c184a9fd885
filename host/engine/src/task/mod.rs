//! Tasks: the pure state machine, the durable record, the timers and the engine that runs them.

pub mod engine;
pub mod fan_out;
pub mod feed;
pub mod forms;
pub mod history;
pub mod live;
pub mod live_tasks;
pub mod observer;
pub mod partners;
pub mod record;
pub mod shares;
pub mod timers;

pub use engine::{
    ConfigRef, EngineError, MAX_OVERVIEW_PAGE, MAX_PAGE_SIZE, OverviewPage, OverviewPosition,
    OverviewQuery, PagePosition, Reply, StreamStart, Stuck, Subscribe, TaskEngine, TaskPage,
    TaskQuery, TaskView,
};
pub use fan_out::FanOut;
pub use feed::{EventFeed, FeedError};
pub use history::HistoryLimits;
pub use observer::{InvocationOutcome, Observer, Unobserved};
pub use partners::PartnerRunner;
pub use record::{TaskDefaults, TaskLimits, TaskRecord};
