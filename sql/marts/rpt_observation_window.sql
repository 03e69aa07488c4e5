-- The observation window [window_start, window_end) the weekly report resolves its week against.
with observation_window as (select * from stg_observation_window),

final as (
    select
        observation_window.window_start,
        observation_window.window_end
    from observation_window
)

select * from final
