//! Asking the API server's authorizers what a user may do: a SubjectAccessReview created by an
//! admin client, the way the tests prove a refusal without trying the forbidden write.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client};

/// What is asked about; an empty field is left out of the review (empty `namespace`: cluster
/// scope or every namespace, as the API server reads it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Attributes<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
}

/// `(group, resource, subresource, name)`, cluster-scoped.
impl<'a> From<(&'a str, &'a str, &'a str, &'a str)> for Attributes<'a> {
    fn from((group, resource, subresource, name): (&'a str, &'a str, &'a str, &'a str)) -> Self {
        Self { group, resource, subresource, name, namespace: "" }
    }
}

fn set(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

/// Whether the API server allows `user` in `groups` to `verb` what `attributes` name.
pub async fn may<'a>(
    admin: &Client,
    user: &str,
    groups: &[&str],
    verb: &str,
    attributes: impl Into<Attributes<'a>>,
) -> Result<bool, kube::Error> {
    let a = attributes.into();
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(a.group.into()),
                resource: set(a.resource),
                subresource: set(a.subresource),
                name: set(a.name),
                namespace: set(a.namespace),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(admin.clone()).create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}
