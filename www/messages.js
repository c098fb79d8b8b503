// @ts-check
// The messages between the page and its workers, as types that the sender and the receiver
// both name (no code: `tsc --noEmit` checks each side against them). Each worker's header says
// what each message means.

// Inference worker (worker.js).

/**
 * @typedef {{ type: "load", model: number, url: string, classes: number }} LoadRequest
 * @typedef {{ type: "infer" | "odin", model: number, set: string, start: number, pixels: Uint8Array }} InferRequest
 * @typedef {{ type: "prefetch", url: string, warm: boolean }} PrefetchRequest
 * @typedef {PrefetchRequest | LoadRequest | InferRequest} InferenceRequest
 * @typedef {{ status: "fetched", model: number }} WeightsFetched
 * @typedef {{ status: "ready", model: number, digest: string | null }} ModelReady
 * @typedef {{ status: "last-layer", model: number, last_layer: Float32Array }} LastLayerAnswer
 * @typedef {{ status: "logits", model: number, set: string, start: number, count: number, logits: Float32Array, features: Float32Array, millis?: number, cached?: boolean }} LogitsAnswer
 * @typedef {{ status: "odin", model: number, set: string, start: number, count: number, scores: Float64Array, millis?: number }} OdinAnswer
 * @typedef {{ status: "error", model?: number, message: string }} WorkerError
 * @typedef {{ status: "retrying", model: number, attempt: number, of: number }} Retrying
 * @typedef {{ status: "unfetched", model: number, what: "network" | "odin", message: string, offline: boolean }} Unfetched
 * @typedef {WeightsFetched | ModelReady | LogitsAnswer | OdinAnswer | WorkerError | Retrying | Unfetched | LastLayerAnswer} InferenceAnswer
 */

// Bootstrap worker (bootstrap-worker.js). Requests are the lab's own (Rust's IntervalRequest,
// RivalsRequest, DifferenceRequest, FeatureRequest, RankingRequest, NormalizedRequest), which the page passes
// through unread but for its model and split.

/**
 * @typedef {{ model: number, split: number, [key: string]: unknown }} HalvesRequest
 * @typedef {{ model: number, split: number, classes: number, calibration_logits: Float32Array, calibration_labels: Uint32Array, evaluation_logits: Float32Array, evaluation_labels: Uint32Array }} Halves
 * @typedef {{ chosen_in: Float64Array, chosen_out: Float64Array, reference_in: Float64Array, reference_out: Float64Array }} DifferenceScores
 * @typedef {{ type: "data" } & Halves} HalvesMessage
 * @typedef {{ type: "intervals" | "rivals" | "anatomy", request: HalvesRequest }} FitRequest
 * @typedef {{ type: "difference", request: object } & DifferenceScores} DifferenceRequest
 * @typedef {{ calibration: Float32Array, calibration_labels: Uint32Array, evaluation: Float32Array, mnist: Float32Array, gaussian: Float32Array, uniform: Float32Array, last_layer: Float32Array }} FeatureInputs
 * @typedef {{ type: "features", request: { model: number, split: number } } & FeatureInputs} FeaturesRequest
 * @typedef {{ scores: Float64Array, rows_in: number, rows_out: number }} RankingScores
 * @typedef {{ type: "ranking", request: object } & RankingScores} RankingRequest
 * @typedef {{ type: "normalized", request: object } & Halves} NormalizedRequest
 * @typedef {HalvesMessage | FitRequest | DifferenceRequest | FeaturesRequest | RankingRequest | NormalizedRequest} BootstrapRequest
 * @typedef {{ status: "intervals", request: HalvesRequest, intervals: object }} IntervalsAnswer
 * @typedef {{ status: "rivals", request: HalvesRequest, rivals: object }} RivalsAnswer
 * @typedef {{ status: "difference", request: object, difference: object }} DifferenceAnswer
 * @typedef {{ status: "features", request: { model: number, split: number }, knn_neighbours: number, scores: Float64Array }} FeaturesAnswer
 * @typedef {{ status: "anatomy", request: HalvesRequest, anatomy: object }} AnatomyAnswer
 * @typedef {{ status: "error", message: string }} BootstrapError
 * @typedef {{ status: "ranking", request: object, ranking: object }} RankingAnswer
 * @typedef {{ status: "normalized", request: object, comparison: object }} NormalizedAnswer
 * @typedef {IntervalsAnswer | RivalsAnswer | DifferenceAnswer | FeaturesAnswer | RankingAnswer | AnatomyAnswer | NormalizedAnswer | BootstrapError} BootstrapAnswer
 */

// Files worker (own-logits-worker.js).

/**
 * @typedef {{ name: string, bytes: Uint8Array }} ChosenFile
 * @typedef {{ type: "own-logits", logits: ChosenFile, labels: ChosenFile, names: ChosenFile | null }} OwnLogitsRequest
 * @typedef {{ classes: number, class_names: string[], logits_name: string, description: string }} OwnAbout
 * @typedef {{ status: "own-logits", logits: Float32Array, labels: Uint32Array, about: OwnAbout }} OwnLogitsAnswer
 * @typedef {OwnLogitsAnswer | { status: "error", message: string }} OwnLogitsReply
 */

export {};
