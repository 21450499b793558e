// Who receives a token's signature. A signed token is a credential outside fencekeeper: a fenced
// HTTP endpoint, a Redis script or a SQL table that verifies signatures offline cannot know who
// presents a token, so a copy works for whoever holds it. So the signature goes to the token's
// principal only: Acquire's answer, and the principal's own reads (Describe, ListResources, Observe,
// RESOURCE_HELD's details). Every other caller sees the token without key_id and signature, which
// every adapter refuses (docs/verifying-tokens.md). Without authentication there is no principal to
// match: reads never carry a signature, and only Acquire's caller gets one.

/**
 * Whether a reader sees the signature of a token issued to principal. viewer: the authenticated
 * caller's name; undefined without authentication.
 */
export function signatureShownTo(principal: string | undefined, viewer: string | undefined): boolean {
  return viewer !== undefined && viewer !== "" && viewer === (principal ?? "");
}
