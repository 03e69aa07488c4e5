-- The signals of each job-stopping failure: one row per signal of int_failure_signals that belongs
-- to a failure, with the failure it belongs to (event_key, the same in the failure events). Rules
-- 1 to 3 of the failure events (docs/data_contract.md §5) decide which signals are one failure:
-- telemetry that names the node merged by time (failure_merge_s), then node-lost attempts
-- (scheduler), then replace tickets (ticket_match_s). Rows that are only evidence (is_evidence:
-- node events neither failures nor planned, clean DCGM samples) are members of the failures they
-- may end (rule 5), and only tell their end.
-- Signals under planned work and the other nodes of a node-lost attempt are not members.
-- Fault-log signals (dataset set) are members of their data set's outages: overlapping or
-- touching faults of a unit are one failure.
with params as (select * from stg_params),

signals as (select * from int_failure_signals),

telemetry as (
    select * from signals
    where
        dataset is null
        and source in ('xid', 'dcgm', 'node_event', 'k8s_event')
        and not in_planned_work
        and not is_evidence
),

stacked as (
    select
        telemetry.*,
        -- the latest span end among the node's earlier signals (open = infinity)
        max(coalesce(telemetry.cover_ts, cast('infinity' as timestamptz))) over (
            partition by telemetry.host
            order by telemetry.ts, telemetry.signal_id
            rows between unbounded preceding and 1 preceding
        ) as earlier_cover_ts
    from telemetry
),

episodes_numbered as (
    select
        stacked.*,
        sum(
            case
                when
                    stacked.earlier_cover_ts is null
                    or stacked.ts
                    > stacked.earlier_cover_ts + to_seconds(params.failure_merge_s)
                    then 1
                else 0
            end
        ) over (
            partition by stacked.host
            order by stacked.ts, stacked.signal_id
            rows between unbounded preceding and current row
        ) as episode_no
    from stacked
    cross join params
),

telemetry_members as (
    select
        'n|' || episodes_numbered.host || '|' || episodes_numbered.episode_no as event_key,
        episodes_numbered.* exclude (earlier_cover_ts, episode_no)  -- noqa: RF03
    from episodes_numbered
),

spans as (
    select
        telemetry_members.event_key,
        telemetry_members.host,
        min(telemetry_members.ts) as from_ts,
        max(coalesce(telemetry_members.cover_ts, cast('infinity' as timestamptz))) as to_ts
    from telemetry_members
    group by telemetry_members.event_key, telemetry_members.host
),

-- 2. scheduler-only evidence ---------------------------------------------------------------------

scheduler as (
    select * from signals
    where dataset is null and source = 'scheduler'
),

-- the nodes of a node-lost attempt where a replace ticket was opened within failure_merge_s of
-- its end: the node it lost, when nothing else names one
ticketed_nodes as (
    select
        scheduler.signal_id,
        scheduler.job_id_raw,
        scheduler.attempt,
        scheduler.host
    from scheduler
    cross join params
    semi join signals as tickets
        on scheduler.host = tickets.host
        and tickets.source = 'ticket'
        and tickets.dataset is null
        and scheduler.ts - to_seconds(params.failure_merge_s) <= tickets.ts
        and scheduler.ts + to_seconds(params.failure_merge_s) >= tickets.ts
),

lost_attempts as (
    select
        scheduler.job_id_raw,
        scheduler.attempt,
        bool_or(scheduler.in_planned_work) as in_planned_work,
        coalesce(min(ticketed_nodes.host), min(scheduler.host)) as first_host
    from scheduler
    left join ticketed_nodes
        on scheduler.signal_id = ticketed_nodes.signal_id
    group by scheduler.job_id_raw, scheduler.attempt
),

scheduler_candidates as (
    select
        scheduler.job_id_raw,
        scheduler.attempt,
        scheduler.signal_id,
        spans.event_key,
        row_number() over (
            partition by scheduler.job_id_raw, scheduler.attempt
            order by spans.from_ts, spans.event_key
        ) as candidate_rank
    from scheduler
    cross join params
    inner join spans
        on scheduler.host = spans.host
        and scheduler.ts >= spans.from_ts - to_seconds(params.failure_merge_s)
        and scheduler.ts <= spans.to_ts + to_seconds(params.failure_merge_s)
),

scheduler_matches as (
    select * from scheduler_candidates
    where candidate_rank = 1
),

scheduler_joined as (
    select
        scheduler_matches.event_key,
        scheduler.*
    from scheduler
    inner join scheduler_matches
        on scheduler.signal_id = scheduler_matches.signal_id
),

scheduler_alone as (
    select scheduler.*
    from scheduler
    inner join lost_attempts
        on scheduler.job_id_raw = lost_attempts.job_id_raw
        and scheduler.attempt = lost_attempts.attempt
        and scheduler.host = lost_attempts.first_host
    anti join scheduler_matches
        on scheduler.job_id_raw = scheduler_matches.job_id_raw
        and scheduler.attempt = scheduler_matches.attempt
    where not lost_attempts.in_planned_work
),

scheduler_lagged as (
    select
        scheduler_alone.*,
        lag(scheduler_alone.ts) over (
            partition by scheduler_alone.host
            order by scheduler_alone.ts, scheduler_alone.signal_id
        ) as previous_ts
    from scheduler_alone
),

scheduler_numbered as (
    select
        scheduler_lagged.* exclude (previous_ts),  -- noqa: RF02
        sum(
            case
                when
                    scheduler_lagged.previous_ts is null
                    or scheduler_lagged.ts
                    > scheduler_lagged.previous_ts + to_seconds(params.failure_merge_s)
                    then 1
                else 0
            end
        ) over (
            partition by scheduler_lagged.host
            order by scheduler_lagged.ts, scheduler_lagged.signal_id
            rows between unbounded preceding and current row
        ) as episode_no
    from scheduler_lagged
    cross join params
),

scheduler_members as (
    select
        's|' || scheduler_numbered.host || '|' || scheduler_numbered.episode_no as event_key,
        scheduler_numbered.* exclude (episode_no)  -- noqa: RF03
    from scheduler_numbered
),

untick_members as (
    select * from telemetry_members
    union all by name
    select * from scheduler_joined
    union all by name
    select * from scheduler_members
),

-- class and unit before tickets (rule 4), and the span tickets are matched against
untick_events as (
    select
        untick_members.event_key,
        untick_members.host,
        min(untick_members.ts) as failed_ts,
        max(coalesce(untick_members.cover_ts, cast('infinity' as timestamptz))) as to_ts,
        first(
            untick_members.unit_level
            order by
                untick_members.component_class = 'unknown',
                untick_members.class_rank,
                untick_members.ts,
                untick_members.signal_id
        ) as unit_level,
        first(
            untick_members.slot
            order by
                untick_members.component_class = 'unknown',
                untick_members.class_rank,
                untick_members.ts,
                untick_members.signal_id
        ) as slot,
        first(
            untick_members.component_class
            order by
                untick_members.component_class = 'unknown',
                untick_members.class_rank,
                untick_members.ts,
                untick_members.signal_id
        ) as component_class,
        first(
            untick_members.class_rank
            order by
                untick_members.component_class = 'unknown',
                untick_members.class_rank,
                untick_members.ts,
                untick_members.signal_id
        ) as class_rank
    from untick_members
    group by untick_members.event_key, untick_members.host
),

-- 3. tickets -------------------------------------------------------------------------------------

tickets as (
    select * from signals
    where dataset is null and source = 'ticket'
),

ticket_candidates as (
    select
        tickets.signal_id,
        untick_events.event_key,
        row_number() over (
            partition by tickets.signal_id
            order by untick_events.failed_ts desc, untick_events.event_key asc
        ) as candidate_rank
    from tickets
    cross join params
    inner join untick_events
        on tickets.host = untick_events.host
        and tickets.ts + to_seconds(params.failure_merge_s) >= untick_events.failed_ts
        and (
            tickets.ts - to_seconds(params.ticket_match_s) <= untick_events.failed_ts
            or tickets.ts <= untick_events.to_ts
        )
    where
        -- a ticket for a GPU slot joins only a failure of that slot, or one whose GPU or class
        -- is not known
        tickets.unit_level <> 'gpu'
        or untick_events.component_class = 'unknown'
        or (
            untick_events.unit_level = 'gpu'
            and (
                untick_events.slot is null
                or untick_events.slot = tickets.slot
                or untick_events.slot not like 'gpu%'
            )
        )
),

-- the first ticket of a failure (by opening) names its unit; a later one for another unit (a GPU
-- slot, or a node-level class) is a failure of its own
ticket_matches as (
    select
        ticket_candidates.signal_id,
        ticket_candidates.event_key,
        coalesce(tickets.slot, tickets.component_class) as ticket_unit,
        first(coalesce(tickets.slot, tickets.component_class)) over (
            partition by ticket_candidates.event_key
            order by tickets.ts, tickets.signal_id
        ) as first_unit
    from ticket_candidates
    inner join tickets
        on ticket_candidates.signal_id = tickets.signal_id
    where ticket_candidates.candidate_rank = 1
),

ticket_members as (
    select
        coalesce(ticket_matches.event_key, 't|' || tickets.ticket_id) as event_key,
        tickets.*
    from tickets
    left join ticket_matches
        on tickets.signal_id = ticket_matches.signal_id
        and ticket_matches.ticket_unit = ticket_matches.first_unit
),

signal_members as (
    select * from untick_members
    union all by name
    select * from ticket_members
),

-- node events that are only down evidence join the failures they may end: those starting from
-- failure_merge_s before the failure to failure_merge_s after its last signal but a ticket
signal_spans as (
    select
        signal_members.event_key,
        signal_members.host,
        min(signal_members.ts) as failed_ts,
        coalesce(
            max(coalesce(signal_members.cover_ts, signal_members.ts))
            filter (where signal_members.source <> 'ticket'),
            min(signal_members.ts)
        ) as last_signal_ts
    from signal_members
    group by signal_members.event_key, signal_members.host
),

evidence_members as (
    select
        signal_spans.event_key,
        evidence.*
    from signal_spans
    cross join params
    inner join signals as evidence
        on signal_spans.host = evidence.host
        and signal_spans.failed_ts - to_seconds(params.failure_merge_s) <= evidence.ts
        and signal_spans.last_signal_ts + to_seconds(params.failure_merge_s) >= evidence.ts
    where evidence.is_evidence and evidence.dataset is null and evidence.source = 'node_event'
),

-- the first clean DCGM sample of each GPU slot a signal of the failure names, from its last
-- signal on (the end of rule 5, for a failure of that GPU)
event_slots as (
    select distinct
        signal_members.event_key,
        signal_members.host,
        signal_members.slot,
        signal_spans.last_signal_ts
    from signal_members
    inner join signal_spans
        on signal_members.event_key = signal_spans.event_key
    where signal_members.unit_level = 'gpu' and signal_members.slot like 'gpu%'
),

clean_samples as (
    select * from signals
    where source = 'dcgm' and is_evidence
),

clean_members as (
    select
        event_slots.event_key,
        clean_samples.*
    from event_slots
    asof inner join clean_samples
        on event_slots.host = clean_samples.host
        and event_slots.slot = clean_samples.slot
        and event_slots.last_signal_ts <= clean_samples.ts
),

fleet_members as (
    select * from signal_members
    union all by name
    select * from evidence_members
    union all by name
    select * from clean_members
),

-- 4. class and unit --------------------------------------------------------------------------------

faults as (
    select * from signals
    where dataset is not null
),

fault_stacked as (
    select
        faults.*,
        max(coalesce(faults.cover_ts, cast('infinity' as timestamptz))) over (
            partition by faults.dataset, faults.host
            order by faults.ts, faults.signal_id
            rows between unbounded preceding and 1 preceding
        ) as earlier_cover_ts
    from faults
),

fault_numbered as (
    select
        fault_stacked.*,
        sum(
            case
                when
                    fault_stacked.earlier_cover_ts is null
                    or fault_stacked.ts > fault_stacked.earlier_cover_ts
                    then 1
                else 0
            end
        ) over (
            partition by fault_stacked.dataset, fault_stacked.host
            order by fault_stacked.ts, fault_stacked.signal_id
            rows between unbounded preceding and current row
        ) as outage_no
    from fault_stacked
),

fault_members as (
    select
        'f|' || fault_numbered.dataset || '|' || fault_numbered.host || '|'
        || fault_numbered.outage_no as event_key,
        fault_numbered.* exclude (earlier_cover_ts, outage_no)  -- noqa: RF03
    from fault_numbered
),

final as (
    select * from fleet_members
    union all by name
    select * from fault_members
)

select * from final
