//! How many changes a committer round waits for before it applies them (issue 35 point 3).
//!
//! A round's `fdatasync` costs about the same for one change as for eight, so under load a
//! round should gather several; but a round that waits for changes that cannot come only adds
//! its wait to every reply. The host does not know how many writers are about to write (on two
//! cores at most two commands run at once, and the rest of a busy moment's writers are requests
//! still in their sockets: a count of the commands under way was tried and gathered fewer
//! changes than this, `bench-results/gather-3.md`). What it does know is how many changes the
//! last rounds found: writers that were there a moment ago are mostly there again (a client
//! that got its answer sends its next request). So a round waits, up to
//! `committer::GATHER_WAIT`, for as many changes as the largest of the last [`ROUNDS`] rounds
//! took, never more than [`MOST`], and only when that is at least [`LEAST`]:
//! - a lone writer's rounds take one change, so it never waits; nor do writers whose rounds
//!   took at most two (measured: with three connections, rounds took one change each without
//!   waiting, and waiting for a second cost a tenth of the requests per second for half the
//!   syncs, `bench-results/gather-4.md`);
//! - three or four writers whose rounds met wait for as many, where the rule before (wait for
//!   four whenever the last round took two) waited the whole time for a fourth that could not
//!   come when there were three;
//! - many writers wait for up to eight, more per sync than the four of the rule before;
//! - when writers leave, the target falls to what is left within [`ROUNDS`] rounds, each of which
//!   waits at most `GATHER_WAIT` in vain.

/// The rounds whose sizes set the target.
pub(crate) const ROUNDS: usize = 8;
/// The most changes a round waits for.
pub(crate) const MOST: usize = 8;
/// The fewest a round waits for: below, it does not wait.
pub(crate) const LEAST: usize = 3;

/// The sizes of the last rounds.
#[derive(Debug, Default)]
pub(crate) struct Gather {
    recent: [usize; ROUNDS],
    next: usize,
}

impl Gather {
    /// The changes a round waits for (1: it does not wait).
    pub(crate) fn target(&self) -> usize {
        match self.recent.iter().copied().max().unwrap_or(0) {
            most if most < LEAST => 1,
            most => most.min(MOST),
        }
    }

    /// A round took `changes`.
    pub(crate) fn took(&mut self, changes: usize) {
        self.recent[self.next] = changes;
        self.next = (self.next + 1) % ROUNDS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_waits_for_as_many_as_recent_rounds_found_and_no_more_than_most() {
        let mut gather = Gather::default();
        assert_eq!(gather.target(), 1, "a new store waits for nobody");
        for _ in 0..100 {
            gather.took(1);
        }
        assert_eq!(gather.target(), 1, "a lone writer never waits");
        gather.took(2);
        assert_eq!(gather.target(), 1, "nor two");
        gather.took(3);
        assert_eq!(gather.target(), 3);
        gather.took(1);
        assert_eq!(gather.target(), 3, "the largest of the last rounds");
        gather.took(40);
        assert_eq!(gather.target(), MOST);
        // Writers leave: within ROUNDS rounds the target is what is left.
        for round in 0..ROUNDS {
            assert_eq!(gather.target(), MOST, "round {round}");
            gather.took(4);
        }
        assert_eq!(gather.target(), 4);
        for _ in 0..ROUNDS {
            gather.took(2);
        }
        assert_eq!(gather.target(), 1);
    }
}
