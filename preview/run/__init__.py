"""The run wing of the offline preview: the stack file read strictly (``stack_file``), the real program under
Pulumi mocks with every registration recorded (``runner``, ``mocks``, ``resource_options``), the files a preview
writes (``files``) and how it writes them (``output_folder``), and whole previews kept by their inputs
(``result_cache``).
"""
