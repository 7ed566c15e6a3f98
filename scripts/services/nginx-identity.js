// The edge's metered identity as a fingerprint: the first 16 hex digits of SHA-256 over the credential
// (Authorization header or session cookie) or, for an anonymous request, the User-Agent. Zone keys and the
// access log use it, so neither holds a secret.
import crypto from 'crypto';

function fingerprint(r) {
    const v = r.variables;
    const subject = v.bw_credential || v.http_user_agent || '';
    return crypto.createHash('sha256').update(subject).digest('hex').slice(0, 16);
}

export default { fingerprint };
