// Sphere impostors as point sprites, for large point sets (viewer.h: wf_render_desc.sprite_min):
// one vertex a sphere where the quads take four. The point is the smallest screen square that
// holds the sphere's outline, and it sits at the depth of the sphere's nearest point along the
// view axis, so the fragment shader's ray-cast depth is never nearer than the point's (the
// conservative depth of sphere.frag.glsl holds). GL discards a point whose centre is outside the
// view: a sphere cut by the window's edge or by the near plane is not drawn (quads draw it).
layout(location = 1) in vec4 a_sphere; // world centre, radius
layout(location = 2) in float a_speed;

uniform mat4 u_view;
uniform mat4 u_proj;       // a symmetric perspective (geometry.c, the shadow pass)
uniform vec4 u_viewport;   // x, y, width, height in pixels
uniform float u_point_max; // the largest point size GL draws

out vec3 v_pos; // unused by sprites (the fragment shader casts its ray from gl_FragCoord)
flat out vec3 v_center;
flat out float v_radius;
flat out float v_speed;

void main() {
  vec3 c = (u_view * vec4(a_sphere.xyz, 1.0)).xyz;
  float r = a_sphere.w;
  v_center = c;
  v_radius = r;
  v_speed = a_speed;
  v_pos = vec3(0.0);
  gl_PointSize = 1.0;
  float zn = c.z + r; // the sphere's nearest view-space z (the camera looks down -z)
  if (!(r > 0.0) || !(zn < 0.0)) { // behind the eye or around it: nothing to draw
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0);
    return;
  }
  vec2 x = wf_sphere_slopes(c.x, c.z, r) * u_proj[0][0], y = wf_sphere_slopes(c.y, c.z, r) * u_proj[1][1];
  float side = max((x.y - x.x) * u_viewport.z, (y.y - y.x) * u_viewport.w) * 0.5;
  gl_PointSize = min(side + 2.0, u_point_max); // a pixel to spare on each side
  float w = -zn;
  gl_Position = vec4(0.5 * vec2(x.x + x.y, y.x + y.y) * w, u_proj[2][2] * zn + u_proj[3][2], w);
}
