//! What the bootstrap worker answered, kept by the request it answers: its bootstrap intervals
//! ([`super::IntervalRequest`]) and temperature scaling's rivals ([`super::RivalsRequest`]).

use super::{Cache, Lab, LabError};

/// Answers of one kind, each with the request it answers; a newer answer to an equal request
/// replaces the older.
#[derive(Debug, Clone)]
pub(super) struct Answers<Q, A>(Vec<(Q, A)>);

impl<Q, A> Default for Answers<Q, A> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<Q: PartialEq, A: Clone> Answers<Q, A> {
    pub(super) fn keep(&mut self, request: Q, answer: A) {
        self.0.retain(|(kept, _)| kept != &request);
        self.0.push((request, answer));
    }

    pub(super) fn get(&self, request: &Q) -> Option<A> {
        self.0
            .iter()
            .find(|(kept, _)| kept == request)
            .map(|(_, answer)| answer.clone())
    }
}

/// A request to the bootstrap worker names the network and split it is for.
pub(super) trait WorkerRequest: PartialEq {
    fn network_and_split(&self) -> (usize, u64);
}

impl Lab {
    /// Keeps `answer` in the store `answers` picks, if `request` is for the network and split
    /// shown now (an answer that arrives after a switch is dropped).
    pub(super) fn keep_answer<Q: WorkerRequest, A: Clone>(
        &mut self,
        answers: fn(&mut Cache) -> &mut Answers<Q, A>,
        request: Q,
        answer: A,
    ) {
        if request.network_and_split() != (self.active, self.split_seed) {
            return;
        }
        if let Some(cache) = self.cache.as_mut() {
            answers(cache).keep(request, answer);
        }
    }

    /// The kept answer to `request` in the store `answers` picks, or the request itself when
    /// every row of the shown network has arrived and none is kept (`None` before that: what
    /// the worker would be asked is still growing).
    pub(super) fn kept_answer<Q: WorkerRequest, A: Clone>(
        &mut self,
        answers: fn(&mut Cache) -> &mut Answers<Q, A>,
        request: Q,
    ) -> Result<Result<A, Option<Q>>, LabError> {
        let complete = self.model(self.active)?.is_complete();
        let kept = self
            .cache
            .as_mut()
            .and_then(|cache| answers(cache).get(&request));
        Ok(match kept {
            Some(answer) => Ok(answer),
            None if complete => Err(Some(request)),
            None => Err(None),
        })
    }
}
