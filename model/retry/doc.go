// Package retry runs one model call with the failure policy every real
// provider shares: a timeout per attempt, exponential backoff with jitter on
// rate limits (429), server errors (5xx), timeouts and network errors,
// Retry-After honoured, and no retry on any other 4xx.
//
// It also defines StatusError, the error a provider returns when the API
// answered with an error status, so callers can test the status with
// errors.As whatever the provider.
//
// It knows nothing of any wire format: providers translate their SDK's
// errors into StatusError before the policy sees them. The SDKs' own retry
// loops are switched off so there is exactly one policy, and tests can
// replace its clock.
package retry
