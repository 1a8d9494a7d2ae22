"""The checking proxy's AWS Signature Version 4 check (s3_proxy.py), by botocore's signer: the
secret, the credential scope's region and date, session tokens, the clock, the payload's SHA-256
and unsigned x-amz-* headers."""
import datetime
import hmac
import re
import urllib.parse

import botocore.auth
import botocore.awsrequest
import botocore.compat
import botocore.credentials

from s3_protocol import _iso, _Refusal


class _Verifier(botocore.auth.S3SigV4Auth):
    """botocore's S3 signer made to sign exactly the headers the request says it signed (botocore
    would leave out some, e.g. user-agent and expect, and add host)."""

    def __init__(self, credentials, region, signed_headers):
        super().__init__(credentials, "s3", region)
        self._signed_headers = signed_headers

    def headers_to_sign(self, request):
        return self._signed_headers


class SigV4Check:
    """The proxy's request handler's authentication (a mixin of s3_proxy._Proxy): it reads the
    handler's headers, command, _pairs, _bucket, _raw_path and server.s3."""

    def _authenticate(self, digest):
        """The access key of a valid signed request, None for an allowed anonymous one; raises
        _Refusal otherwise."""
        s3 = self.server.s3
        auth = self.headers.get("Authorization")
        if auth is None:
            if any(name.lower() in ("x-amz-algorithm", "x-amz-signature") for name, _ in self._pairs):
                raise _Refusal(501, "NotImplemented", "the test proxy does not check presigned URLs")
            if self._bucket in s3.public_buckets and self.command in ("GET", "HEAD"):
                return None
            raise _Refusal(403, "AccessDenied")
        auth = auth.strip()
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            raise _Refusal(400, "InvalidRequest", "The authorization mechanism you have provided is not "
                           "supported. Please use AWS4-HMAC-SHA256.")
        fields = {}
        for item in auth[len("AWS4-HMAC-SHA256 "):].split(","):
            name, _, value = item.strip().partition("=")
            fields[name] = value
        if not {"Credential", "SignedHeaders", "Signature"} <= fields.keys():
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; "
                           "it needs Credential, SignedHeaders and Signature.")
        scope = fields["Credential"].split("/")
        if len(scope) != 5 or scope[3] != "s3" or scope[4] != "aws4_request" or not re.fullmatch(r"\d{8}", scope[1]):
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; the "
                           "Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
        access_key, scope_date, region = scope[0], scope[1], scope[2]
        account = s3.accounts.get(access_key)
        if account is None:
            raise _Refusal(403, "InvalidAccessKeyId", extra={"AWSAccessKeyId": access_key})
        if account.expired:
            raise _Refusal(400, "ExpiredToken")
        signed_names = fields["SignedHeaders"].split(";")
        sent_token = self.headers.get("x-amz-security-token")
        if account.token is not None:
            if (sent_token is None or "x-amz-security-token" not in signed_names
                    or not hmac.compare_digest(sent_token.encode(), account.token.encode())):
                raise _Refusal(403, "InvalidToken")
        elif sent_token is not None:
            raise _Refusal(403, "InvalidToken")
        if region != s3.region:
            raise _Refusal(400, "AuthorizationHeaderMalformed", f"The authorization header is malformed; the "
                           f"region '{region}' is wrong; expecting '{s3.region}'", extra={"Region": s3.region})
        content_sha = self.headers.get("x-amz-content-sha256")
        if content_sha is None:
            raise _Refusal(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
        amz_date = self.headers.get("x-amz-date")
        try:
            when = datetime.datetime.strptime(amz_date or "", "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            raise _Refusal(403, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
        present = {name.lower() for name in self.headers.keys()}
        unsigned = {name for name in present if name.startswith("x-amz-")} | {"host", "x-amz-date", "x-amz-content-sha256"}
        unsigned = sorted(unsigned - set(signed_names))
        if unsigned:  # S3 wants host and every x-amz-* header signed
            raise _Refusal(403, "AccessDenied", "There were headers present in the request which were not signed",
                           extra={"HeadersNotSigned": ", ".join(unsigned)})
        if amz_date[:8] != scope_date:
            raise _Refusal(400, "AuthorizationHeaderMalformed", "The authorization header is malformed; Invalid "
                           "credential date. Date is not the same as X-Amz-Date.")
        now = datetime.datetime.now(datetime.timezone.utc)
        if abs((now - when).total_seconds()) > s3.max_skew:
            raise _Refusal(403, "RequestTimeTooSkewed", extra={"RequestTime": amz_date, "ServerTime": _iso(now),
                                                                "MaxAllowedSkewMilliseconds": s3.max_skew * 1000})
        expected, string_to_sign, canonical = self._expected_signature(access_key, account, region, amz_date,
                                                                       signed_names)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            if account.token is not None:
                canonical = canonical.replace(account.token, "<redacted>")
            raise _Refusal(403, "SignatureDoesNotMatch", extra={
                "AWSAccessKeyId": access_key, "StringToSign": string_to_sign, "CanonicalRequest": canonical})
        if content_sha.startswith("STREAMING-"):
            raise _Refusal(501, "NotImplemented", f"the test proxy does not take {content_sha} bodies")
        if content_sha != "UNSIGNED-PAYLOAD":
            if not re.fullmatch(r"[0-9a-f]{64}", content_sha):
                raise _Refusal(400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                               "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid sha256 value.")
            if content_sha != digest:
                raise _Refusal(400, "XAmzContentSHA256Mismatch", extra={
                    "ClientComputedContentSHA256": content_sha, "S3ComputedContentSHA256": digest})
        return access_key

    def _expected_signature(self, access_key, account, region, amz_date, signed_names):
        """(signature, string to sign, canonical request) by botocore, of this request as received:
        the canonical URI is the path decoded and encoded once (S3 does not encode twice nor
        normalise . and ..), the query's names and values are encoded and sorted."""
        signed = botocore.compat.HTTPHeaders()
        for name in signed_names:
            values = self.headers.get_all(name)
            if values is None:
                raise _Refusal(403, "SignatureDoesNotMatch", f"the signed header '{name}' is not in the request")
            for value in values:
                signed[name] = value
        canonical_path = urllib.parse.quote(urllib.parse.unquote_to_bytes(self._raw_path), safe="/~")
        request = botocore.awsrequest.AWSRequest(
            method=self.command, url=f"http://{self.headers.get('host', '')}{canonical_path}",
            headers={"X-Amz-Content-SHA256": self.headers["x-amz-content-sha256"]}, params=list(self._pairs))
        request.context["timestamp"] = amz_date
        signer = _Verifier(botocore.credentials.Credentials(access_key, account.secret, account.token), region, signed)
        canonical = signer.canonical_request(request)
        string_to_sign = signer.string_to_sign(request, canonical)
        return signer.signature(string_to_sign, request), string_to_sign, canonical
