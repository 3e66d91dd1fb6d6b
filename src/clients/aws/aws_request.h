// Signing and sending one request to an AWS service, for every AWS client (S3, DynamoDB, Glue): SigV4 through
// libcurl on a query already in canonical form, the session token of temporary credentials, and one renewal of
// credentials the service refused as expired.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "clients/aws/aws_config.h"
#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

// The query as SigV4 signs it: every name and value RFC 3986 encoded, the pairs sorted by name, then value, and
// "name=" for a name without a value. libcurl before 8.3 signs the query exactly as written (Debian 12 has 7.88), so
// a URL whose query is already canonical is signed right by every libcurl.
std::string aws_canonical_query(std::string_view query);

// `request` signed for `signing_name` ("s3", "dynamodb", "glue") with the service's current credentials and sent.
// When the service refuses the credentials as expired and they can be renewed, they are renewed and the request
// is signed and sent once more: a refused request was not acted on, so sending it again is safe.
Result<HttpResponse> aws_send(const AwsService& service, std::string_view signing_name, HttpRequest request);

// The error for an answer that refused renewable credentials as expired even after aws_send renewed them: the
// endpoint that hands them out is behind, so it is retried later (kUnavailable), not a configuration error.
// nullopt when the credentials do not renew or `error_code` is not an expiry.
std::optional<Error> aws_expired_after_renewal(const AwsService& service, std::string_view error_code,
                                               std::string_view what, std::string_view status);

}  // namespace skippr
