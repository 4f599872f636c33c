//! Objects of the resources `spec.kubernetes.kubeAPIServer.encryptionConfig.resources` lists
//! are stored encrypted once they are written again: a resource newly listed (not yet in
//! `status.encryptedResources`) has every object rewritten, unchanged, after kube-apiserver
//! rolled out with the new EncryptionConfiguration, as Gardener does. An etcd encryption key
//! rotation rewrites them too (with the Secrets), so nothing stays under the old key.
//!
//! [`newly_listed`] and [`group_and_plural`] decide; [`rewrite`] writes (with [`rewrite_all`], which
//! the etcd encryption key rotation uses for the Secrets too).

use crate::components::kube_apiserver;
use crate::flow::TaskError;
use crate::shoot::operation::apply::task_err;
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The listed resources (without `secrets`, normalised) that `status.encryptedResources` does
/// not name yet: their stored objects may still be plain text.
pub fn newly_listed(spec: &[String], status: &[String]) -> Vec<String> {
    let done = kube_apiserver::listed_encrypted_resources(status);
    kube_apiserver::listed_encrypted_resources(spec).into_iter().filter(|r| !done.contains(r)).collect()
}

/// `(group, plural)` of `resource` or `resource.group` (core resources have group `""`).
pub fn group_and_plural(resource: &str) -> (&str, &str) {
    match resource.split_once('.') {
        Some((plural, group)) => (group, plural),
        None => ("", resource),
    }
}

/// Writes every object of `resource` again, unchanged; one changed or deleted meanwhile was
/// written by someone else, which stored it the new way too. Returns how many were written.
pub async fn rewrite(client: &Client, resource: &str) -> Result<usize, TaskError> {
    let (group, plural) = group_and_plural(resource);
    let discovered = kube::discovery::group(client, group).await.map_err(task_err)?;
    let (ar, caps) =
        discovered.recommended_resources().into_iter().find(|(ar, _)| ar.plural == plural).ok_or_else(|| {
            TaskError::msg(format!("the shoot's API has no resource {resource:?} (encryptionConfig.resources)"))
        })?;
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    rewrite_all(&all, |object| match (&caps.scope, object.namespace()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), &ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    })
    .await
}

/// Writes every object `all` lists again, unchanged, each through the API `api_for` gives for
/// it, page by page; one changed or deleted meanwhile was written by someone else. Returns how
/// many were written.
pub async fn rewrite_all<K>(all: &Api<K>, api_for: impl Fn(&K) -> Api<K>) -> Result<usize, TaskError>
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let mut params = ListParams::default().limit(250);
    let mut rewritten = 0usize;
    loop {
        let page = all.list(&params).await.map_err(task_err)?;
        for object in &page.items {
            match api_for(object).replace(&object.name_any(), &Default::default(), object).await {
                Ok(_) => rewritten += 1,
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(task_err(e)),
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(rewritten)
}

/// Rewrites the objects of every newly listed resource (part of deploying kube-apiserver, once
/// it rolled out with the new EncryptionConfiguration).
pub(super) async fn rewrite_newly_encrypted(ctx: &OperationContext) -> Result<(), TaskError> {
    let status = ctx.shoot.status.as_ref().map(|s| s.encrypted_resources.clone()).unwrap_or_default();
    let newly = newly_listed(&ctx.values.apiserver.encrypted_resources, &status);
    if newly.is_empty() {
        return Ok(());
    }
    let client = shoot_client(ctx).await?;
    for resource in newly {
        let rewritten = rewrite(&client, &resource).await?;
        tracing::info!(%resource, rewritten, "objects rewritten encrypted");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_resources_the_status_does_not_name_are_rewritten() {
        assert_eq!(
            newly_listed(&list(&["configmaps.", "deployments.apps"]), &list(&["configmaps"])),
            list(&["deployments.apps"])
        );
        assert!(newly_listed(&list(&["configmaps"]), &list(&["configmaps."])).is_empty());
        assert!(newly_listed(&[], &[]).is_empty());
    }

    #[test]
    fn a_resource_names_its_group() {
        assert_eq!(group_and_plural("configmaps"), ("", "configmaps"));
        assert_eq!(group_and_plural("deployments.apps"), ("apps", "deployments"));
        assert_eq!(group_and_plural("ingresses.networking.k8s.io"), ("networking.k8s.io", "ingresses"));
    }
}
