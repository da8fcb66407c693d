"""The diff wing of the offline preview: what a change does, against a base preview (``baseline``, ``snapshot``):
the resource changes and their reasons (``changes``, ``replacements``, ``moves``, ``urns``, ``rendered_diff``,
``refused``), the console summary and plans (``summary``, ``driver_plan``, ``mig_plan``), the reports of
``make diff`` (``review``, ``report_markdown``, ``report_html``, ``diff_json``) and the pull-request comment
built from them (``comment``).
"""
