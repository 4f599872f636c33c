use super::*;
use api::common::ErrorCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Log = Arc<Mutex<Vec<String>>>;

fn logging(
    log: &Log,
    name: &'static str,
) -> impl Fn() -> futures::future::BoxFuture<'static, Result<(), TaskError>> + use<> {
    let log = log.clone();
    move || {
        let log = log.clone();
        Box::pin(async move {
            log.lock().unwrap().push(name.to_string());
            Ok(())
        })
    }
}

fn failing(message: &'static str) -> impl Fn() -> futures::future::BoxFuture<'static, Result<(), TaskError>> {
    move || Box::pin(async move { Err(TaskError::msg(message).with_codes([ErrorCode::InfraQuotaExceeded])) })
}

#[tokio::test]
async fn dependencies_run_first() {
    let log = Log::default();
    let mut b = FlowBuilder::new("chain");
    let a = b.task("a", &[], logging(&log, "a"));
    let bb = b.task("b", &[&a], logging(&log, "b"));
    b.task("c", &[&bb], logging(&log, "c"));
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert!(result.is_success());
    assert_eq!(*log.lock().unwrap(), ["a", "b", "c"]);
    assert_eq!(result.percent(), 100);
}

#[tokio::test]
async fn independent_tasks_run_concurrently() {
    // Each task waits for the other at a barrier: sequential execution would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut b = FlowBuilder::new("parallel");
    for id in ["left", "right"] {
        let barrier = barrier.clone();
        b.task(id, &[], move || {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok(())
            }
        });
    }
    let flow = b.build().unwrap();
    let result = tokio::time::timeout(Duration::from_secs(5), flow.run(&RunOptions::default())).await.unwrap();
    assert!(result.is_success());
}

#[tokio::test]
async fn a_failure_blocks_only_its_dependents() {
    let log = Log::default();
    let mut b = FlowBuilder::new("partial");
    let bad = b.task("bad", &[], failing("quota exceeded"));
    let after_bad = b.task("after-bad", &[&bad], logging(&log, "after-bad"));
    b.task("after-after-bad", &[&after_bad], logging(&log, "after-after-bad"));
    let slow = b.task("slow", &[], {
        let log = log.clone();
        move || {
            let log = log.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                log.lock().unwrap().push("slow".into());
                Ok(())
            }
        }
    });
    b.task("after-slow", &[&slow], logging(&log, "after-slow"));
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert!(!result.is_success());
    assert_eq!(*log.lock().unwrap(), ["slow", "after-slow"], "the healthy branch ran to the end");
    assert_eq!(result.failed.len(), 1);
    assert_eq!(result.failed[0].task.0, "bad");
    assert_eq!(result.blocked, [TaskId::from("after-bad"), TaskId::from("after-after-bad")]);
    assert_eq!(result.codes(), [ErrorCode::InfraQuotaExceeded]);
    assert_eq!(result.summary(), "task \"bad\" failed: quota exceeded");
    assert_eq!(result.percent(), 40, "2 of 5 tasks succeeded");
}

#[tokio::test]
async fn a_panic_is_the_task_error() {
    let mut b = FlowBuilder::new("panics");
    let p = b.task("explodes", &[], || async {
        let v: Vec<u8> = Vec::new();
        if v.is_empty() {
            panic!("boom at index 3");
        }
        Ok(())
    });
    b.task("after", &[&p], || async { Ok(()) });
    b.task("unrelated", &[], || async { Ok(()) });
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert_eq!(result.failed.len(), 1);
    assert_eq!(result.failed[0].error.message(), "task panicked: boom at index 3");
    assert_eq!(result.blocked, [TaskId::from("after")]);
    assert_eq!(result.succeeded, [TaskId::from("unrelated")]);
}

#[tokio::test]
async fn skipped_tasks_count_as_done_but_not_as_progress() {
    let log = Log::default();
    let mut b = FlowBuilder::new("skips");
    let s = b.task_if("skipped", &[], false, logging(&log, "skipped"));
    b.task("after", &[&s], logging(&log, "after"));
    let reports = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        on_progress: Some({
            let reports = reports.clone();
            Arc::new(move |p: &Progress| reports.lock().unwrap().push((p.percent, p.total)))
        }),
        ..Default::default()
    };
    let result = b.build().unwrap().run(&options).await;
    assert_eq!(*log.lock().unwrap(), ["after"]);
    assert_eq!(result.skipped, [TaskId::from("skipped")]);
    assert_eq!(*reports.lock().unwrap(), [(100, 1)]);
}

#[tokio::test]
async fn progress_rises_and_the_cleaner_sees_every_success() {
    let mut b = FlowBuilder::new("progress");
    let mut prev = None;
    for i in 0..4 {
        let id = format!("t{i}");
        let deps: Vec<&TaskId> = prev.iter().collect();
        prev = Some(b.task(&id, &deps, || async { Ok(()) }));
    }
    let percents = Arc::new(Mutex::new(Vec::new()));
    let cleaned = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        on_progress: Some({
            let p = percents.clone();
            Arc::new(move |x: &Progress| p.lock().unwrap().push(x.percent))
        }),
        on_task_succeeded: Some({
            let c = cleaned.clone();
            Arc::new(move |id: &TaskId| c.lock().unwrap().push(id.0.clone()))
        }),
        ..Default::default()
    };
    b.build().unwrap().run(&options).await;
    assert_eq!(*percents.lock().unwrap(), [25, 50, 75, 100]);
    assert_eq!(*cleaned.lock().unwrap(), ["t0", "t1", "t2", "t3"]);
}

#[test]
fn invalid_graphs_are_refused() {
    let mut b = FlowBuilder::new("dup");
    b.task("a", &[], || async { Ok(()) });
    b.task("a", &[], || async { Ok(()) });
    assert!(matches!(b.build(), Err(GraphError::Duplicate { .. })));

    let mut b = FlowBuilder::new("unknown");
    b.task("a", &[&TaskId::from("ghost")], || async { Ok(()) });
    let err = b.build().unwrap_err();
    assert_eq!(err.to_string(), "flow unknown: task \"a\" depends on unknown task \"ghost\"");

    let mut b = FlowBuilder::new("cycle");
    b.task("a", &[&TaskId::from("b")], || async { Ok(()) });
    b.task("b", &[&TaskId::from("a")], || async { Ok(()) });
    b.task("c", &[], || async { Ok(()) });
    match b.build() {
        Err(GraphError::Cycle { tasks, .. }) => assert_eq!(tasks, ["a", "b"]),
        other => panic!("expected a cycle, got {other:?}"),
    }
}

#[tokio::test]
async fn a_graph_of_100_tasks_respects_every_edge() {
    // Task i depends on the tasks i-1, i/2 and i/3 (where distinct and smaller): a dense,
    // deterministic DAG with long chains and wide fan-in.
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut b = FlowBuilder::new("hundred");
    let mut ids: Vec<TaskId> = Vec::new();
    let mut edges = Vec::new();
    for i in 0..100usize {
        let mut deps: Vec<usize> = [i.wrapping_sub(1), i / 2, i / 3].into_iter().filter(|&d| d < i).collect();
        deps.sort();
        deps.dedup();
        let dep_ids: Vec<&TaskId> = deps.iter().map(|&d| &ids[d]).collect();
        let order = order.clone();
        let id = b.task(&format!("task-{i:03}"), &dep_ids, move || {
            let order = order.clone();
            async move {
                tokio::task::yield_now().await;
                order.lock().unwrap().push(i);
                Ok(())
            }
        });
        edges.extend(deps.into_iter().map(|d| (d, i)));
        ids.push(id);
    }
    let flow = b.build().unwrap();
    assert_eq!(flow.len(), 100);
    let result = flow.run(&RunOptions::default()).await;
    assert!(result.is_success());
    assert_eq!(result.succeeded.len(), 100);
    let order = order.lock().unwrap();
    let position = |t: usize| order.iter().position(|&x| x == t).unwrap();
    for (from, to) in edges {
        assert!(position(from) < position(to), "task {to} ran before its dependency {from}");
    }
}

#[tokio::test]
async fn dropping_the_run_cancels_running_tasks() {
    let finished = Arc::new(AtomicUsize::new(0));
    let mut b = FlowBuilder::new("cancel");
    {
        let finished = finished.clone();
        b.task("long", &[], move || {
            let finished = finished.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                finished.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        });
    }
    let flow = b.build().unwrap();
    let cut = tokio::time::timeout(Duration::from_millis(50), flow.run(&RunOptions::default())).await;
    assert!(cut.is_err(), "the run was cut short");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the task kept running after its flow was dropped");
}

#[tokio::test]
async fn task_durations_are_recorded() {
    let histogram = prometheus::HistogramVec::new(
        prometheus::HistogramOpts::new("flow_task_duration_seconds", "duration of flow tasks"),
        &["flow", "task"],
    )
    .unwrap();
    let mut b = FlowBuilder::new("metrics");
    b.task("only", &[], || async { Ok(()) });
    let options = RunOptions { task_duration: Some(histogram.clone()), ..Default::default() };
    b.build().unwrap().run(&options).await;
    assert_eq!(histogram.with_label_values(&["metrics", "only"]).get_sample_count(), 1);
}

#[test]
fn error_messages_carry_the_whole_chain() {
    #[derive(Debug, thiserror::Error)]
    #[error("deploying etcd")]
    struct Outer(#[source] std::io::Error);
    let err = TaskError::new(&Outer(std::io::Error::other("connection refused")));
    assert_eq!(err.message(), "deploying etcd: connection refused");
}

#[test]
fn describe_lists_tasks_and_dependencies() {
    let mut b = FlowBuilder::new("describe");
    let a = b.task("a", &[], || async { Ok(()) });
    b.task_if("b", &[&a], false, || async { Ok(()) });
    let d = b.build().unwrap().describe();
    assert_eq!(d, vec![("a".to_string(), vec![], false), ("b".to_string(), vec!["a".to_string()], true)]);
}

/// Fails transiently `times` times, then succeeds; counts the attempts.
fn flaky(
    attempts: &Arc<AtomicUsize>,
    times: usize,
) -> impl Fn() -> futures::future::BoxFuture<'static, Result<(), TaskError>> + use<> {
    let attempts = attempts.clone();
    move || {
        let attempts = attempts.clone();
        Box::pin(async move {
            if attempts.fetch_add(1, Ordering::SeqCst) < times {
                Err(TaskError::msg("connection refused").transient())
            } else {
                Ok(())
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_transient_error_is_retried_inside_the_task_and_never_fails_the_flow() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut b = FlowBuilder::new("blip");
    b.task("deploy", &[], flaky(&attempts, 3));
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert!(result.is_success(), "{}", result.summary());
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_transient_error_that_outlasts_the_budget_fails_the_task() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut b = FlowBuilder::new("down");
    b.task("deploy", &[], flaky(&attempts, usize::MAX));
    let started = tokio::time::Instant::now();
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert_eq!(result.failed.len(), 1);
    assert_eq!(result.failed[0].error.message(), "connection refused");
    assert!(attempts.load(Ordering::SeqCst) > 2);
    // Virtual time: the retries stopped within the budget.
    assert!(started.elapsed() <= TRANSIENT_RETRY_BUDGET);
}

#[tokio::test(start_paused = true)]
async fn errors_that_are_not_transient_or_carry_codes_fail_at_once() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = |error: TaskError| {
        let attempts = attempts.clone();
        move || {
            attempts.fetch_add(1, Ordering::SeqCst);
            let error = error.clone();
            Box::pin(async move { Err(error) }) as futures::future::BoxFuture<'static, Result<(), TaskError>>
        }
    };
    let mut b = FlowBuilder::new("hard");
    b.task("invalid", &[], counted(TaskError::msg("422 invalid")));
    b.task("quota", &[], counted(TaskError::msg("quota").transient().with_codes([ErrorCode::InfraQuotaExceeded])));
    let result = b.build().unwrap().run(&RunOptions::default()).await;
    assert_eq!(result.failed.len(), 2);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn kube_and_io_errors_are_classified_by_their_cause() {
    let api = |code: u16| kube::Error::Api(Box::new(kube::core::Status { code, ..Default::default() }));
    for code in [409, 429, 500, 502, 503, 504] {
        assert!(TaskError::new(&api(code)).is_transient(), "{code}");
    }
    for code in [400, 403, 404, 422] {
        assert!(!TaskError::new(&api(code)).is_transient(), "{code}");
    }
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    assert!(TaskError::new(&refused).is_transient());
    // A transient cause deep in the chain counts.
    #[derive(Debug, thiserror::Error)]
    #[error("applying the kube-proxy DaemonSet")]
    struct Wrapper(#[source] std::io::Error);
    assert!(TaskError::new(&Wrapper(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset"))).is_transient());
    assert!(!TaskError::new(&std::io::Error::new(std::io::ErrorKind::InvalidData, "bad")).is_transient());
}

#[tokio::test]
async fn progress_names_the_tasks_running_after_each_finish() {
    // `quick` finishes first and unblocks `after`; `slow` runs until `after` is done.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(Mutex::new(Some(released)));
    let mut b = FlowBuilder::new("waiting");
    let quick = b.task("quick", &[], || async { Ok(()) });
    b.task("slow", &[], move || {
        let released = released.lock().unwrap().take();
        async move {
            if let Some(r) = released {
                let _ = r.await;
            }
            Ok(())
        }
    });
    let release = Arc::new(Mutex::new(Some(release)));
    b.task("after", &[&quick], move || {
        let release = release.lock().unwrap().take();
        async move {
            if let Some(r) = release {
                let _ = r.send(());
            }
            Ok(())
        }
    });
    let reports = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        on_progress: Some({
            let r = reports.clone();
            Arc::new(move |p: &Progress| {
                let running: Vec<String> = p.running.iter().map(|t| t.0.clone()).collect();
                r.lock().unwrap().push((p.finished.0.clone(), running));
            })
        }),
        ..Default::default()
    };
    assert!(b.build().unwrap().run(&options).await.is_success());
    let reports = reports.lock().unwrap().clone();
    assert_eq!(reports[0], ("quick".to_string(), vec!["slow".to_string(), "after".to_string()]));
    assert_eq!(reports.last().unwrap().1, Vec::<String>::new(), "{reports:?}");
}

#[test]
fn context_keeps_whether_the_cause_is_transient() {
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let e = TaskError::context("applying shoot system resources", &refused);
    assert_eq!(e.message(), "applying shoot system resources: refused");
    assert!(e.is_transient());
    let bad = std::io::Error::new(std::io::ErrorKind::InvalidData, "bad");
    assert!(!TaskError::context("reading", &bad).is_transient());
}
