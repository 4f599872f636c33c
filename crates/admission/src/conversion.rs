//! The CRD conversion webhook: ConversionReviews (`apiextensions.k8s.io/v1`) for the kinds served
//! in more than one version, answered with [`api::core::v1::conversion::convert`]. The server
//! ([`crate::server`]) routes `POST` [`api::core::v1::CONVERSION_PATH`] here and points the
//! ControllerDeployment CRD's `spec.conversion` at itself with its CA bundle.

use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::{Status, TypeMeta};

/// Answers one ConversionReview body. Never fails: a body that is not a ConversionReview gets a
/// failed response, and so does a request with any object that cannot be converted (the API
/// server then refuses the read or write that needed it, with this message).
pub fn review_bytes(body: &[u8]) -> (Vec<u8>, bool) {
    let response = match serde_json::from_slice::<ConversionReview>(body)
        .map_err(|e| e.to_string())
        .and_then(|r| ConversionRequest::try_from(r).map_err(|e| e.to_string()))
    {
        Ok(request) => answer(request),
        Err(e) => ConversionResponse::invalid(Status::failure(&format!("not a ConversionReview: {e}"), "BadRequest")),
    };
    let ok = response.result.is_success();
    let mut review = response.into_review();
    review.types = TypeMeta { api_version: "apiextensions.k8s.io/v1".into(), kind: "ConversionReview".into() };
    (serde_json::to_vec(&review).unwrap_or_default(), ok)
}

fn answer(request: ConversionRequest) -> ConversionResponse {
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    match objects.into_iter().map(|o| api::core::v1::conversion::convert(o, &desired)).collect::<Result<Vec<_>, _>>() {
        Ok(converted) => response.success(converted),
        Err(e) => {
            tracing::warn!(desired = %desired, error = %e, "conversion refused");
            response.failure(Status::failure(&e.to_string(), "Invalid"))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use serde_json::{Value, json};

    fn review(objects: Value, desired: &str) -> Value {
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects}
        });
        let (bytes, _) = review_bytes(&serde_json::to_vec(&body).unwrap());
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn converts_every_object_in_order_and_echoes_the_uid() {
        let objects = json!([
            {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment",
             "metadata": {"name": "a"}, "type": "helm", "providerConfig": {"chart": "eA=="}},
            {"apiVersion": "core.gardener.cloud/v1", "kind": "ControllerDeployment",
             "metadata": {"name": "b"}, "helm": {"rawChart": "eQ=="}}
        ]);
        let out = review(objects, "core.gardener.cloud/v1");
        assert_eq!(out["kind"], "ConversionReview");
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["result"]["status"], "Success");
        let converted = out["response"]["convertedObjects"].as_array().unwrap();
        assert_eq!(converted[0]["metadata"]["name"], "a");
        assert_eq!(converted[0]["helm"]["rawChart"], "eA==");
        assert_eq!(converted[1]["metadata"]["name"], "b");
        assert!(converted.iter().all(|o| o["apiVersion"] == "core.gardener.cloud/v1"));
    }

    #[test]
    fn an_unconvertible_object_fails_the_review_with_its_name() {
        let objects = json!([{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment",
                              "metadata": {"name": "broken"}, "type": "helm", "providerConfig": {"chart": 1}}]);
        let out = review(objects, "core.gardener.cloud/v1");
        assert_eq!(out["response"]["result"]["status"], "Failure");
        assert!(out["response"]["result"]["message"].as_str().unwrap().contains("broken"));
        assert_eq!(out["response"]["convertedObjects"], json!([]));
    }

    #[test]
    fn garbage_gets_a_failed_review() {
        let (bytes, ok) = review_bytes(b"{not json");
        assert!(!ok);
        let out: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(out["response"]["result"]["status"], "Failure");
    }
}
