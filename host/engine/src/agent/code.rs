//! A partner's compiled component, which may still be compiling.
//!
//! Why: compiling a component takes from a tenth of a second (a Rust partner) to seconds of
//! Cranelift (a Python one, 18 MB with CPython). A host that compiled every bundle before binding
//! its port answered nothing for the better part of two minutes on a fresh machine. So start-up
//! reads and checks each bundle (manifest, ids, footprint: all quick), serves at once, and
//! compiles in the background; each partner serves as soon as its own component is ready. The
//! doors answer a partner that is still compiling with a retryable error; what runs inside the
//! host (a group command, an expired task's clean-up hook) waits for it instead.

use aiphost_runtime::PartnerCode;
use std::sync::Arc;
use tokio::sync::watch;

/// Where a partner's component is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Compiled and linked: it can run.
    Ready,
    /// Being compiled (or waiting for a core to compile on).
    Compiling,
    /// Its compile failed, with why: it cannot run until the operator replaces the bundle.
    Failed(Arc<str>),
}

impl Readiness {
    /// The word the host's endpoints use for it: `ready`, `compiling` or `failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::Compiling => "compiling",
            Readiness::Failed(_) => "failed",
        }
    }
}

type Slot = Option<Result<PartnerCode, Arc<str>>>;

/// A partner's component: ready, compiling, or failed. Cheap to clone.
#[derive(Clone)]
pub struct Code(watch::Receiver<Slot>);

/// The other end of a [`Code`] that is compiling: sets it, once.
pub struct CodeSetter(watch::Sender<Slot>);

impl Code {
    /// A component that is ready now.
    pub fn ready(code: PartnerCode) -> Self {
        let (_, receiver) = watch::channel(Some(Ok(code)));
        Code(receiver)
    }

    /// No component at all (a fake partner of the engine's tests, whose runner needs none).
    pub fn missing() -> Self {
        let (_, receiver) = watch::channel(Some(Err(Arc::from("the partner has no component"))));
        Code(receiver)
    }

    /// A component being compiled; the setter makes it ready (or failed).
    pub fn compiling() -> (Self, CodeSetter) {
        let (sender, receiver) = watch::channel(None);
        (Code(receiver), CodeSetter(sender))
    }

    /// Where it is now.
    pub fn readiness(&self) -> Readiness {
        match &*self.0.borrow() {
            None => Readiness::Compiling,
            Some(Ok(_)) => Readiness::Ready,
            Some(Err(reason)) => Readiness::Failed(reason.clone()),
        }
    }

    /// The wall-clock time one invocation may take, once compiled (`None` until then, or if
    /// its compile failed).
    pub fn invocation_limit(&self) -> Option<std::time::Duration> {
        match &*self.0.borrow() {
            Some(Ok(code)) => Some(code.deadline()),
            _ => None,
        }
    }

    /// The component, once compiled; why not, if its compile failed (or its setter was dropped
    /// without setting it).
    pub async fn get(&self) -> Result<PartnerCode, Arc<str>> {
        if let Some(result) = &*self.0.borrow() {
            return result.clone();
        }
        let mut receiver = self.0.clone();
        match receiver.wait_for(Option::is_some).await {
            Ok(slot) => match &*slot {
                Some(result) => result.clone(),
                None => Err(Arc::from("the partner's component was never compiled")),
            },
            Err(_) => Err(Arc::from(
                "the partner's compile was abandoned (the host is stopping)",
            )),
        }
    }
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Code({:?})", self.readiness())
    }
}

impl CodeSetter {
    /// The compile's outcome: waiters wake up with it.
    pub fn set(self, outcome: Result<PartnerCode, String>) {
        self.0.send_replace(Some(outcome.map_err(Arc::from)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_when_the_compile_ends() {
        let (code, setter) = Code::compiling();
        assert_eq!(code.readiness(), Readiness::Compiling);
        let waiter = tokio::spawn({
            let code = code.clone();
            async move { code.get().await.err() }
        });
        tokio::task::yield_now().await;
        setter.set(Err("bad component".into()));
        assert_eq!(waiter.await.unwrap().as_deref(), Some("bad component"));
        assert_eq!(
            code.readiness(),
            Readiness::Failed(Arc::from("bad component"))
        );
    }

    #[tokio::test]
    async fn a_dropped_setter_fails_the_waiters() {
        let (code, setter) = Code::compiling();
        drop(setter);
        assert!(code.get().await.is_err());
        assert!(Code::missing().get().await.is_err());
    }
}
