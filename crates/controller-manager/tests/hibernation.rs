//! The hibernation schedule controller against a real kube-apiserver, on a manual clock: a
//! schedule's start tick (in the schedule's time zone) hibernates the shoot, a wake-up tick
//! missed while the controller-manager was down is applied when it starts again, a tick older
//! than the trigger deadline is not, and a bad schedule is reported with its field.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::Shoot;
use api::core::shoot::Hibernation;
use api::core::shoot::settings::HibernationSchedule;
use chrono::{Datelike, TimeZone};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use support::*;

const NS: &str = "garden-dev";

/// `hour:minute` in Berlin on the day `days` after `t` (UTC date), as a timestamp.
fn berlin(t: Timestamp, days: i64, hour: u32, minute: u32) -> Timestamp {
    let day = chrono::DateTime::from_timestamp(t.as_second(), 0).unwrap().date_naive() + chrono::Days::new(days as u64);
    let local = chrono_tz::Europe::Berlin
        .with_ymd_and_hms(day.year(), day.month(), day.day(), hour, minute, 0)
        .single()
        .unwrap();
    Timestamp::from_second(local.timestamp()).unwrap()
}

async fn state(shoots: &Api<Shoot>, name: &str) -> Result<(Option<bool>, Option<Timestamp>), String> {
    let s = shoots.get(name).await.map_err(|e| e.to_string())?;
    Ok((
        s.spec.hibernation.and_then(|h| h.enabled),
        s.status.and_then(|s| s.last_hibernation_trigger_time).map(|t| t.0),
    ))
}

fn scheduled(name: &str, start: &str, end: &str, location: &str) -> Shoot {
    let mut s = shoot(name, NS);
    s.spec.hibernation = Some(Hibernation {
        enabled: None,
        schedules: vec![HibernationSchedule {
            start: Some(start.into()),
            end: Some(end.into()),
            location: Some(location.into()),
        }],
    });
    s
}

#[tokio::test]
async fn schedules_hibernate_and_wake_up_and_a_missed_tick_is_applied_after_downtime() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), NS);
    let running = start(&env, controller_manager::Config::default()).await;
    let created = create_shoot(&client, &scheduled("office", "0 19 * * *", "0 7 * * *", "Europe/Berlin"))
        .await
        .metadata
        .creation_timestamp
        .unwrap()
        .0;
    create_shoot(&client, &scheduled("broken", "0 19 * *", "0 7 * * *", "Europe/Berlin")).await;

    // 19:00 in Berlin the next day: hibernate.
    let evening = berlin(created, 1, 19, 0);
    running.clock.set(evening);
    eventually("the start tick to hibernate the shoot", || async {
        match state(&shoots, "office").await? {
            (Some(true), Some(t)) if t == evening => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let notes = event_notes(&client, NS, "office", "HibernationEnabled").await;
    assert!(notes.iter().any(|n| n.contains("spec.hibernation.schedules[0].start")), "{notes:?}");
    let notes = event_notes(&client, NS, "broken", "InvalidHibernationSchedule").await;
    assert!(notes.iter().any(|n| n.contains("spec.hibernation.schedules[0].start")), "{notes:?}");
    assert_eq!(state(&shoots, "broken").await.unwrap(), (None, None));

    // The controller-manager is down over the 07:00 wake-up tick and comes back at 08:30.
    drop(running);
    let morning = berlin(created, 2, 8, 30);
    let running = start(&env, controller_manager::Config::default()).await;
    running.clock.set(morning);
    eventually("the missed wake-up tick to be applied", || async {
        match state(&shoots, "office").await? {
            (Some(false), Some(t)) if t == morning => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Down over the 19:00 tick again, back at 23:00: beyond the 2 h trigger deadline, so
    // nothing happens until the next tick.
    let late = berlin(created, 2, 23, 0);
    let seen = running.metrics.reconciliations("shoot-hibernation");
    running.clock.set(late);
    eventually("a look after the clock moved", || async {
        let n = running.metrics.reconciliations("shoot-hibernation");
        if n > seen { Ok(()) } else { Err(format!("{n}")) }
    })
    .await;
    assert_eq!(state(&shoots, "office").await.unwrap(), (Some(false), Some(morning)), "a tick past the deadline");
    assert_eq!(running.metrics.all_errors("shoot-hibernation"), 0, "{}", running.metrics.render());
}
