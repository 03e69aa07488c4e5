-- Replacement lives from repair tickets (replacement AFR, spares consumption): one row per unit
-- life and component class, on the age scale (hours since the unit was installed). The failure
-- process (every job-stopping failure, whatever fixed it) has its own lives view; these lives end
-- only where a ticket replaced the part, and exist only where a fleet exports tickets.
-- A slot (GPU slot from nvidia-smi, or one node-level unit per class) is cut into lives by its
-- replace / planned_replace tickets: [installed, t1.opened), [t1.closed, t2.opened), ...,
-- [tk.closed, removed or window end). A GPU slot's life is at risk for every GPU-level class; it
-- fails only for the ticket's class when the action is replace (competing risks). Lives are clipped
-- to the observation window: entry_h > 0 is left truncation, failed = false is right censoring.
-- GPU slots come from the nvidia-smi snapshots; a node with none takes its GPU slots from its
-- DCGM samples (GPU index; the UUID stands in for the serial), so a fleet register with DCGM
-- scrapes alone still gives GPU lives. A GPU nvidia-smi printed no serial for ([N/A]) is named by
-- its UUID too (stg_inventory.unit_id).
with fleet as (select * from stg_fleet),

observation as (select * from stg_observation_window),

classes as (select * from seed_component_class),

snapshots as (select * from stg_inventory),

-- GPUs seen by DCGM, one row per (host, GPU index, UUID) at its first sample; read from the raw
-- table: a duplicate sample changes neither, and staging's deduplication is a window over every
-- sample
dcgm_gpus as (
    select
        raw_dcgm_samples.host,
        min(raw_dcgm_samples.ts) as snapshot_ts,
        raw_dcgm_samples.gpu_index,
        raw_dcgm_samples.uuid as serial
    from raw_dcgm_samples
    where
        raw_dcgm_samples.gpu_index is not null
        and raw_dcgm_samples.host not in (
            select snapshots.host from snapshots
            where snapshots.host is not null
        )
    group by raw_dcgm_samples.host, raw_dcgm_samples.gpu_index, raw_dcgm_samples.uuid
),

inventory as (
    select
        snapshots.host,
        snapshots.snapshot_ts,
        snapshots.slot,
        snapshots.unit_id as serial  -- the UUID where nvidia-smi printed no serial
    from snapshots
    union all
    select
        dcgm_gpus.host,
        dcgm_gpus.snapshot_ts,
        'gpu' || dcgm_gpus.gpu_index as slot,
        dcgm_gpus.serial
    from dcgm_gpus
),

tickets as (
    select * from stg_repairs
    where action in ('replace', 'planned_replace')
),

slots as (
    select distinct
        inventory.host as node,
        inventory.slot,
        'gpu' as unit_level
    from inventory
    union all
    select
        fleet.node,
        classes.component_class as slot,
        'node' as unit_level
    from fleet
    cross join classes
    where classes.unit_level = 'node'
),

cuts as (
    select
        slots.node,
        slots.slot,
        slots.unit_level,
        tickets.ticket_id,
        tickets.opened_ts,
        tickets.closed_ts,
        tickets.action,
        tickets.component_class as ticket_class,
        tickets.serial_out,
        tickets.serial_in,
        row_number() over (
            partition by slots.node, slots.slot
            order by tickets.opened_ts, tickets.ticket_id
        ) as ticket_no
    from slots
    inner join tickets
        on slots.node = tickets.node
        and slots.slot = tickets.slot
),

ended_lives as (
    select
        cuts.node,
        cuts.slot,
        cuts.unit_level,
        cuts.ticket_no - 1 as generation,
        coalesce(lag(cuts.closed_ts) over slot_tickets, fleet.installed_ts) as start_ts,
        cuts.opened_ts as end_ts,
        cuts.action as end_action,
        cuts.ticket_class,
        cuts.ticket_id as end_ticket_id,
        cuts.serial_out as serial
    from cuts
    inner join fleet
        on cuts.node = fleet.node
    window slot_tickets as (partition by cuts.node, cuts.slot order by cuts.ticket_no)
),

last_tickets as (
    select
        cuts.node,
        cuts.slot,
        max(cuts.ticket_no) as n_tickets,
        arg_max_null(cuts.closed_ts, cuts.ticket_no) as last_closed_ts,
        arg_max_null(cuts.serial_in, cuts.ticket_no) as last_serial_in
    from cuts
    group by cuts.node, cuts.slot
),

first_serials as (
    select
        inventory.host as node,
        inventory.slot,
        arg_min(inventory.serial, inventory.snapshot_ts) as serial
    from inventory
    group by inventory.host, inventory.slot
),

open_lives as (
    select
        slots.node,
        slots.slot,
        slots.unit_level,
        coalesce(last_tickets.n_tickets, 0) as generation,
        case
            when last_tickets.n_tickets is null then fleet.installed_ts
            else last_tickets.last_closed_ts
        end as start_ts,
        fleet.removed_ts as end_ts,
        cast(null as varchar) as end_action,
        cast(null as varchar) as ticket_class,
        cast(null as varchar) as end_ticket_id,
        case
            when last_tickets.n_tickets is null then first_serials.serial
            else last_tickets.last_serial_in
        end as serial
    from slots
    inner join fleet
        on slots.node = fleet.node
    left join last_tickets
        on slots.node = last_tickets.node
        and slots.slot = last_tickets.slot
    left join first_serials
        on slots.node = first_serials.node
        and slots.slot = first_serials.slot
),

lives as (
    select * from ended_lives
    union all
    -- a slot whose last repair is still open has no current life
    select * from open_lives
    where open_lives.start_ts is not null
),

clipped as (
    select
        lives.*,
        greatest(lives.start_ts, observation.window_start) as observed_from_ts,
        least(coalesce(lives.end_ts, observation.window_end), observation.window_end)
            as observed_to_ts,
        lives.end_ts is not null and lives.end_ts < observation.window_end as ended_in_window
    from lives
    cross join observation
    where
        coalesce(lives.end_ts, observation.window_end) > observation.window_start
        and lives.start_ts < observation.window_end
        and coalesce(lives.end_ts, observation.window_end) > lives.start_ts
),

final as (
    select
        clipped.node || '/' || clipped.slot || '#' || clipped.generation as unit_id,
        classes.component_class,
        clipped.unit_level,
        clipped.node,
        clipped.slot,
        clipped.generation,
        clipped.serial,
        fleet.rack,
        fleet.cluster,
        fleet.batch,
        clipped.start_ts as installed_ts,
        clipped.observed_from_ts,
        clipped.observed_to_ts,
        -- ages in hours since the unit was installed
        epoch(clipped.observed_from_ts - clipped.start_ts) / 3600.0 as entry_h,
        epoch(clipped.observed_to_ts - clipped.start_ts) / 3600.0 as exit_h,
        coalesce(
            clipped.ended_in_window
            and clipped.end_action = 'replace'
            and clipped.ticket_class = classes.component_class,
            false
        ) as failed,
        clipped.end_ticket_id
    from clipped
    inner join classes
        on clipped.unit_level = classes.unit_level
        and (clipped.unit_level = 'gpu' or clipped.slot = classes.component_class)
    inner join fleet
        on clipped.node = fleet.node
)

select * from final
