-- NVIDIA Xid catalog (seed; see sql/seeds/README.md for the source and version).
with catalog as (select * from seed_xid),

final as (select * from catalog)

select * from final
