{#
  Which materialization each kind of model gets on each adapter, in one place.

  dbt-materialize builds `table` models as materialized views and refuses `incremental`
  models (Materialize keeps every materialized view incrementally up to date, so its docs say
  to use `materialized_view` instead). Until sqlfront has materialized views
  (var `materialized_views`, dbt_project.yml), whatever would be one is a plain view.
#}

{% macro materialized_view_or_view() -%}
  {{ return('materialized_view' if var('materialized_views') else 'view') }}
{%- endmacro %}

{% macro table_materialization() -%}
  {{ return('table' if target.type != 'materialize' else materialized_view_or_view()) }}
{%- endmacro %}

{% macro incremental_materialization() -%}
  {{ return('incremental' if target.type != 'materialize' else materialized_view_or_view()) }}
{%- endmacro %}
